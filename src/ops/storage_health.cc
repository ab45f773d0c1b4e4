// Storage faults: the log line, the counter and the readiness run (see storage_health.h).
#include "ops/storage_health.h"

#include "ops/daemon_metrics.h"
#include "ops/log.h"

namespace hookbox {

bool IsStorageBusy(const Status& s) { return s.unavailable() == Status::UnavailableKind::kBusy; }

bool IsStorageFault(const Status& s) {
  const Status::Code code = s.code();
  return (code == Status::Code::kUnavailable || code == Status::Code::kInternal) &&
         !IsStorageBusy(s);
}

void StorageHealth::Record(std::string_view op, const Status& s) {
  if (s.ok()) {
    // The common case (every accept, claim and checkpoint) takes no lock.
    if (failing_.load(std::memory_order_acquire) == 0) return;
    std::lock_guard lock(mu_);
    auto it = runs_.find(op);
    if (it != runs_.end() && it->second.failures > 0) {
      if (it->second.failures >= kStorageFailuresUnready) {
        LogInfo({{"msg", "storage recovered"}, {"op", op}, {"failures", it->second.failures}});
      }
      it->second = Run{};
      failing_.fetch_sub(1, std::memory_order_release);
    }
    return;
  }
  if (!IsStorageFault(s)) return;
  const std::string error = s.ToString();
  int failures = 0;
  {
    std::lock_guard lock(mu_);
    auto it = runs_.find(op);
    if (it == runs_.end()) it = runs_.emplace(std::string(op), Run{}).first;
    Run& run = it->second;
    if (run.failures == 0) failing_.fetch_add(1, std::memory_order_release);
    ++run.failures;
    run.last = std::chrono::steady_clock::now();
    failures = run.failures;
  }
  Metrics().storage_errors.With({std::string(op)}).Inc();
  LogError({{"msg", "storage error"}, {"op", op}, {"error", error}, {"in_a_row", failures}});
}

std::string StorageHealth::Problem() const {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  for (const auto& [op, run] : runs_) {
    if (run.failures >= kStorageFailuresUnready && now - run.last < kStorageFailureFresh) {
      return "storage failing: " + op + " failed " + std::to_string(run.failures) +
             " times in a row (the log has each error)";
    }
  }
  return "";
}

StorageHealth& Storage() {
  static StorageHealth* health = new StorageHealth();  // never destroyed: threads may outlive main
  return *health;
}

}  // namespace hookbox
