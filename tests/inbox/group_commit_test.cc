// GroupCommit (src/inbox/group_commit.h), the leader-led queue both backends write through:
// groups are bounded, every item runs exactly once, and an Exclusive turn runs alone, after
// the items queued before it and before those queued after it.
#include "inbox/group_commit.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

namespace {

struct Item {
  int runs = 0;
};

}  // namespace

TEST_CASE("group commit: every item runs once, in groups no larger than asked") {
  hookbox::GroupCommit<Item> queue;
  constexpr int kThreads = 8, kEach = 200;
  std::vector<Item> items(kThreads * kEach);
  std::atomic<size_t> largest{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < kEach; ++n) {
        queue.Submit(items[t * kEach + n], 4, [&](const std::vector<Item*>& group) {
          if (group.size() > largest) largest = group.size();
          for (Item* i : group) ++i->runs;
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const Item& i : items) CHECK(i.runs == 1);
  CHECK(largest <= 4);
}

TEST_CASE("group commit: an Exclusive turn runs alone, no group beside it") {
  hookbox::GroupCommit<Item> queue;
  std::atomic<bool> in_turn{false}, stop{false};
  std::atomic<int> overlaps{0}, groups{0}, turns{0}, not_once{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&] {
      while (!stop) {
        Item item;
        queue.Submit(item, 16, [&](const std::vector<Item*>& group) {
          if (in_turn) ++overlaps;
          ++groups;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          if (in_turn) ++overlaps;
          for (Item* i : group) ++i->runs;
        });
        if (item.runs != 1) ++not_once;  // (Catch's CHECK is for the main thread only)
      }
    });
  }
  for (int n = 0; n < 20; ++n) {
    queue.Exclusive([&] {
      in_turn = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      in_turn = false;
      ++turns;
    });
  }
  stop = true;
  for (auto& th : writers) th.join();
  CHECK(turns == 20);
  CHECK(groups > 0);
  CHECK(overlaps == 0);
  CHECK(not_once == 0);
}
