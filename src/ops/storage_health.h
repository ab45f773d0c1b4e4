// Storage faults, made loud. Every storage operation that fails for a reason other than lock
// contention — the SQLite checkpoint, the daily purge, the dispatcher's claims and finishes,
// and an accept — is one `error` log line ("storage error", the operation, the database's
// own message) and one count in hookbox_storage_errors_total{op}. Contention (SQLite's
// BUSY/LOCKED, PostgreSQL's lock timeout, serialization failure or deadlock: the backends'
// "storage busy") is normal under load and stays quiet: it neither counts nor breaks a run.
//
// /readyz asks Problem(): while one operation has failed kStorageFailuresUnready times in a
// row, the last of them within kStorageFailureFresh, the daemon is not ready, and the reason
// names storage and the operation. That operation's next success ends the run at once. The
// freshness bound keeps a daemon that a load balancer stopped sending to (so no accept can
// succeed) from staying unready for ever: without new failures it is ready again after
// kStorageFailureFresh, and the next failures make it unready again. The watchdog does not
// ask: a restart mends no disk.
//
// Thread-safe: Record() and Problem() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hookbox {

// Failures of one operation in a row that make /readyz answer 503.
inline constexpr int kStorageFailuresUnready = 3;
// How long a run of failures keeps the daemon unready without a new one.
inline constexpr std::chrono::seconds kStorageFailureFresh{30};

// The operations recorded (the `op` label).
inline constexpr std::string_view kStorageAccept = "accept";
inline constexpr std::string_view kStorageCheckpoint = "checkpoint";
inline constexpr std::string_view kStoragePurge = "purge";
inline constexpr std::string_view kStorageClaim = "claim";
inline constexpr std::string_view kStorageFinish = "finish";
// The instance's heartbeat and the release of expired instances' leases (work/liveness.h).
inline constexpr std::string_view kStorageHeartbeat = "heartbeat";

// True for the backends' lock-contention status (Unavailable of kind kBusy, "storage busy"):
// quiet, retried.
bool IsStorageBusy(const Status& s);
// True for a failure that is the database's fault (Unavailable or Internal, not busy). An
// answer the database gave (a strict_body conflict, a lost lease, text it cannot store, a
// row gone) is not one.
bool IsStorageFault(const Status& s);

class StorageHealth final {
 public:
  // One outcome of `op`: Ok ends its run of failures; a fault (IsStorageFault) is logged,
  // counted and extends the run; any other status (busy, or an answer such as a conflict)
  // changes nothing. Callers pass what the inbox returned, unfiltered.
  void Record(std::string_view op, const Status& s);
  // Empty while no operation is over the threshold; else why the daemon is not ready (the
  // operation, not the database's message: /readyz answers any client).
  std::string Problem() const;

 private:
  struct Run {
    int failures = 0;
    std::chrono::steady_clock::time_point last;
  };
  mutable std::mutex mu_;  // guards runs_
  std::map<std::string, Run, std::less<>> runs_;
  std::atomic<int> failing_{0};  // runs_ entries with failures > 0 (changed under mu_)
};

// The process's one tracker (what /readyz and /metrics show).
StorageHealth& Storage();

}  // namespace hookbox
