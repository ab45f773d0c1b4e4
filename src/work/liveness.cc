// Lease liveness: the instance id, its heartbeat thread and the release of expired
// instances' leases (see liveness.h).
#include "work/liveness.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "base/crypto.h"
#include "config/config.h"
#include "ops/log.h"
#include "ops/storage_health.h"

namespace hookbox {
namespace {

std::string HostName() {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  return host;
}

// 16 bytes from the kernel's CSPRNG (getrandom blocks only until the pool is first
// initialised, long before a daemon starts). Without them there is no safe instance id, and
// a process that shares one with another would take its leases for its own.
std::string DrawInstanceId() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      LogError({{"msg", "no random bytes for the instance id"}, {"errno", errno}});
      std::abort();
    }
  }
  return HexEncode(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

}  // namespace

const std::string& InstanceId() {
  static const std::string id = DrawInstanceId();
  return id;
}

const std::string& LeaseOwnerPrefix() {
  static const std::string prefix = InstanceId() + ":";
  return prefix;
}

std::chrono::milliseconds InstanceLiveness::IntervalFor(std::chrono::milliseconds timeout) {
  return std::max(timeout / 6, std::chrono::milliseconds(100));
}

InstanceLiveness::InstanceLiveness(JobQueue& jobs, const Clock& clock,
                                   std::chrono::milliseconds timeout)
    : jobs_(jobs), clock_(clock), timeout_(timeout), host_(HostName()) {}

InstanceLiveness::~InstanceLiveness() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void InstanceLiveness::Start() {
  LogInfo({{"msg", "instance"},
           {"instance", InstanceId()},
           {"host", host_},
           {"pid", static_cast<int64_t>(getpid())},
           {"heartbeat_timeout", FormatDuration(timeout_)}});
  Tick();
  thread_ = std::thread([this] { Loop(); });
}

Status InstanceLiveness::Beat() {
  return jobs_.Heartbeat(
      {InstanceId(), host_, static_cast<int64_t>(getpid()), clock_.Now(), timeout_});
}

Status InstanceLiveness::Release() {
  const TimePoint now = clock_.Now();
  auto released = jobs_.ReleaseExpiredLeases(now, InstanceId(), now - kForgetAfter);
  if (!released.ok()) return released.status();
  for (const ExpiredInstance& e : *released) {
    LogWarn({{"msg", "released the leases of an instance whose heartbeat expired"},
             {"instance", e.id},
             {"host", e.host},
             {"pid", e.pid},
             {"heartbeat_at", e.heartbeat_at},
             {"jobs", e.jobs}});
  }
  return Status::Ok();
}

void InstanceLiveness::Tick() {
  Status beat = Beat();
  Status release = Release();
  // One outcome per tick: its first fault, else Ok (a lost race, "storage busy", is neither).
  Storage().Record(kStorageHeartbeat, IsStorageFault(beat) ? beat : release);
}

void InstanceLiveness::Loop() {
  const std::chrono::milliseconds interval = IntervalFor(timeout_);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (cv_.wait_for(lock, interval, [this] { return stopping_; })) break;
    lock.unlock();
    Tick();
    lock.lock();
  }
}

void InstanceLiveness::Stop() {
  {
    std::lock_guard lock(mu_);
    if (removed_) return;
    removed_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  auto ended = jobs_.RemoveInstance(InstanceId(), clock_.Now());
  if (!ended.ok()) {
    LogWarn({{"msg", "could not remove the instance: its leases end when its heartbeat expires"},
             {"instance", InstanceId()},
             {"error", ended.status().ToString()}});
  } else if (*ended > 0) {
    LogInfo({{"msg", "ended the leases this process still held"},
             {"instance", InstanceId()},
             {"jobs", *ended}});
  }
}

}  // namespace hookbox
