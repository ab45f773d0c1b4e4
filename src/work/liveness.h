// Lease liveness (DESIGN.md, "Lease liveness"): how every hookbox process on one inbox tells
// a lease whose owner died from one whose owner still runs, on any host and in any PID
// namespace. A process is an instance: a random id drawn once (InstanceId), which starts the
// name of every lease owner of the process ("<id>:dispatcher" for the dispatcher,
// "<id>:request:..." for each sync request). InstanceLiveness writes the instance into the
// inbox (Inbox::Heartbeat) at start and again every sixth of `heartbeat_timeout` on a thread
// of its own; the same thread ends the leases of the instances whose heartbeat expired
// (Inbox::ReleaseExpiredLeases), so the jobs of a replica that crashed, or of this host's
// previous process after kill -9, run again once its heartbeat expires, not when their long
// leases do. A clean stop removes the instance and ends its own leftover leases at once. It
// runs in `serve` whether or not the dispatcher does: sync requests hold leases too.
//
// A heartbeat or release that fails in storage is logged and counted (ops/storage_health.h,
// op "heartbeat") and tried again at the next beat; it is never fatal. While the beats fail,
// the other processes see this instance's heartbeat age, and past `heartbeat_timeout` they
// take over its jobs: a replica cut off from the database that long counts as dead.
//
// Thread-safe: Beat() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "inbox/job_queue.h"
#include "ops/clock.h"

namespace hookbox {

// This process's instance: 32 lowercase hex characters (128 bits from the kernel's CSPRNG,
// getrandom), drawn at the first call and the same for the life of the process.
const std::string& InstanceId();
// "<InstanceId()>:": the start of every lease owner name of this process (the dispatcher and
// sync requests), by which the inbox finds an instance's leases.
const std::string& LeaseOwnerPrefix();

class InstanceLiveness final {
 public:
  // How often the instance beats: a sixth of its timeout (5 s of the default 30 s), so that
  // five beats in a row may fail or be late before the others count it dead.
  static std::chrono::milliseconds IntervalFor(std::chrono::milliseconds timeout);
  // Expired instances' rows are deleted this long after they expired (their leases were
  // ended when they expired; the row stays for the operator's eyes).
  static constexpr std::chrono::hours kForgetAfter{24};

  InstanceLiveness(JobQueue& jobs, const Clock& clock, std::chrono::milliseconds timeout);
  // Stops the thread; the instance stays (Stop() removes it): a process that did not stop
  // cleanly leaves its leases to its heartbeat's expiry.
  ~InstanceLiveness();
  InstanceLiveness(const InstanceLiveness&) = delete;
  InstanceLiveness& operator=(const InstanceLiveness&) = delete;

  // Writes the first heartbeat and ends the leases of instances already expired (before the
  // dispatcher's first claim), then beats and releases on the thread.
  void Start();
  // One heartbeat now (Inbox::Heartbeat), as the thread writes it.
  Status Beat();
  // A clean stop, once nothing of this process holds or takes a lease any more (the
  // listeners and the dispatcher have stopped): stops the thread, removes the instance and
  // ends any lease still under its name. Safe to call twice.
  void Stop();

 private:
  void Loop();
  // A beat, then the release of expired instances' leases; a fault of either is recorded.
  void Tick();
  // Ends the leases of expired instances and logs whose.
  Status Release();

  JobQueue& jobs_;
  const Clock& clock_;
  const std::chrono::milliseconds timeout_;
  const std::string host_;

  std::mutex mu_;  // guards stopping_, removed_
  std::condition_variable cv_;
  bool stopping_ = false;
  bool removed_ = false;
  std::thread thread_;
};

}  // namespace hookbox
