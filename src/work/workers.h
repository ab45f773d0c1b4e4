// The worker pool: `workers:` threads that claim due jobs from the inbox with a lease, run
// the job's handler, and finish the job with a compare-and-swap on the lease token. A worker
// whose lease ran out and was taken over loses: its result is logged and never written.
// Failures are retried with backoff (backoff.h); a job whose tries are used up, or that
// failed permanently, is dead.
//
// Leases last the longest handler timeout plus a margin, so no other worker starts a job
// while an attempt may still run; a job left `processing` by a crash becomes claimable
// when its lease ends.
//
// Thread-safe: Wake() and Stop() may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "handlers/handler.h"
#include "inbox/inbox.h"
#include "ops/clock.h"

namespace hookbox {

// "<host>:<pid>:": the start of every lease owner name of this process (workers and sync
// requests), so a restarted daemon can tell which leases died with a previous process.
const std::string& LeaseOwnerPrefix();

class Workers final {
 public:
  Workers(Inbox& inbox, std::shared_ptr<const Config> config,
          std::shared_ptr<const HandlerSet> handlers, const Clock& clock);
  ~Workers();

  // Ends the leases held by processes of this host that no longer run (a crash, kill -9),
  // then starts `count` threads (0: none; jobs wait in the inbox).
  void Start(int count);
  // New work may be due (an accept created jobs): idle workers look now, not at their
  // next poll.
  void Wake();
  // Stops claiming and waits up to `grace` for running attempts to finish. False when some
  // are still running then: their leases will expire and the jobs will be retried.
  bool Stop(std::chrono::milliseconds grace);

  // Swaps the config and handlers (SIGHUP); attempts under way finish with the old ones.
  void Swap(std::shared_ptr<const Config> config, std::shared_ptr<const HandlerSet> handlers);

  // One claim-run-finish cycle for `owner`; false when nothing was due. For tests.
  bool RunOnce(const std::string& owner);

 private:
  void Loop(int index);
  void RunJob(const ClaimedJob& job);

  Inbox& inbox_;
  const Clock& clock_;

  std::mutex mu_;  // guards config_, handlers_, wake_seq_, stopping_, running_
  std::condition_variable cv_;
  std::shared_ptr<const Config> config_;
  std::shared_ptr<const HandlerSet> handlers_;
  uint64_t wake_seq_ = 0;
  bool stopping_ = false;
  int running_ = 0;  // threads inside RunJob
  std::vector<std::thread> threads_;
};

}  // namespace hookbox
