// Leader-led group commit, shared by the backends: callers queue their item, and the first
// in the queue leads. It takes up to `max_group` queued items, runs them as one group on its
// own thread (one transaction, one commit) with the lock released, so that others queue
// meanwhile, then wakes each caller of the group and hands the lead to the next in the
// queue. No thread exists only to write, and a caller never waits for more than the group in
// hand and its own (LevelDB's DBImpl::Write works the same way).
//
// The queue entries live on the callers' stacks: queueing allocates nothing.
//
// Exclusive(fn) queues a turn that is no group: when it reaches the front, fn runs alone
// and the items queued behind it wait until it returns (SQLite's WAL restart uses it: see
// sqlite/checkpoints.cc). A leader's group stops before such a turn.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

namespace hookbox {

template <typename Item>
class GroupCommit {
 public:
  // Returns once the group holding `item` has run: run_group(std::vector<Item*>&) is called
  // by the leader, on the leader's thread, once per group; it records each item's result in
  // the item itself.
  template <typename RunGroup>
  void Submit(Item& item, size_t max_group, RunGroup&& run_group) {
    Entry mine{&item};
    std::unique_lock lock(mu_);
    queue_.push_back(&mine);
    mine.cv.wait(lock, [&] { return mine.done || queue_.front() == &mine; });
    if (mine.done) return;
    std::vector<Entry*> group;
    for (Entry* e : queue_) {
      if (group.size() == max_group || e->item == nullptr) break;
      group.push_back(e);
    }
    lock.unlock();
    std::vector<Item*> items;
    items.reserve(group.size());
    for (Entry* e : group) items.push_back(e->item);
    run_group(items);
    lock.lock();
    for (Entry* e : group) {
      queue_.pop_front();
      e->done = true;
      if (e != &mine) e->cv.notify_one();
    }
    if (!queue_.empty()) queue_.front()->cv.notify_one();
  }

  // Runs fn() on the calling thread once every item queued before this call has run, while
  // the items queued after it wait.
  template <typename Fn>
  void Exclusive(Fn&& fn) {
    Entry mine{nullptr};
    std::unique_lock lock(mu_);
    queue_.push_back(&mine);
    mine.cv.wait(lock, [&] { return queue_.front() == &mine; });
    lock.unlock();
    fn();
    lock.lock();
    queue_.pop_front();
    if (!queue_.empty()) queue_.front()->cv.notify_one();
  }

 private:
  struct Entry {
    explicit Entry(Item* i) : item(i) {}
    Item* item;  // null: an Exclusive turn
    bool done = false;
    std::condition_variable cv;  // signalled when done, or when this entry leads
  };

  std::mutex mu_;  // guards queue_ and each entry's done
  std::deque<Entry*> queue_;
};

}  // namespace hookbox
