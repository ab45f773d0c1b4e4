// The worker pool: claim, run, finish (see workers.h).
#include "work/workers.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "ops/log.h"
#include "work/attempt.h"

namespace hookbox {
namespace {

constexpr std::chrono::milliseconds kPoll{250};          // idle workers look this often
constexpr std::chrono::milliseconds kLeaseMargin{30000};  // beyond the longest timeout
constexpr std::chrono::milliseconds kStorageBackoff{1000};

std::string HostName() {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  return host;
}

// Ends the leases of this host's processes that are gone.
void ReleaseDeadLeases(Inbox& inbox, TimePoint now) {
  auto owners = inbox.LeaseOwners();
  if (!owners.ok()) return;
  const std::string host = HostName() + ":";
  for (const std::string& owner : *owners) {
    if (owner.rfind(host, 0) != 0) continue;  // another host's: wait for its lease to end
    size_t end = owner.find(':', host.size());
    if (end == std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(owner.substr(host.size(), end - host.size()).c_str()));
    if (pid <= 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string prefix = owner.substr(0, end + 1);
    if (inbox.ExpireLeases(prefix, now).ok()) {
      LogInfo({{"msg", "released the leases of a process that is gone"}, {"owner", prefix}});
    }
  }
}

}  // namespace

Workers::Workers(Inbox& inbox, std::shared_ptr<const Config> config,
                 std::shared_ptr<const HandlerSet> handlers, const Clock& clock)
    : inbox_(inbox),
      clock_(clock),
      config_(std::move(config)),
      handlers_(std::move(handlers)) {}

Workers::~Workers() {
  Stop(std::chrono::hours(1));
}

const std::string& LeaseOwnerPrefix() {
  static const std::string prefix = HostName() + ":" + std::to_string(getpid()) + ":";
  return prefix;
}

void Workers::Start(int count) {
  ReleaseDeadLeases(inbox_, clock_.Now());
  for (int i = 0; i < count; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

void Workers::Wake() {
  {
    std::lock_guard lock(mu_);
    ++wake_seq_;
  }
  cv_.notify_all();
}

bool Workers::Stop(std::chrono::milliseconds grace) {
  std::unique_lock lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  bool idle = cv_.wait_for(lock, grace, [this] { return running_ == 0; });
  lock.unlock();
  if (!idle) return false;
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  return true;
}

void Workers::Swap(std::shared_ptr<const Config> config,
                   std::shared_ptr<const HandlerSet> handlers) {
  std::lock_guard lock(mu_);
  config_ = std::move(config);
  handlers_ = std::move(handlers);
}

bool Workers::RunOnce(const std::string& owner) {
  std::chrono::milliseconds lease;
  {
    std::lock_guard lock(mu_);
    lease = handlers_->longest_timeout + kLeaseMargin;
  }
  auto claimed = inbox_.ClaimJobs(owner, 1, clock_.Now(), lease);
  if (!claimed.ok()) {
    LogError({{"msg", "cannot claim jobs"}, {"error", claimed.status().ToString()}});
    return false;
  }
  if (claimed->empty()) return false;
  RunJob(claimed->front());
  return true;
}

void Workers::Loop(int index) {
  const std::string owner = LeaseOwnerPrefix() + "w" + std::to_string(index);
  for (;;) {
    uint64_t seen;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      seen = wake_seq_;
      ++running_;
    }
    bool worked = RunOnce(owner);
    std::unique_lock lock(mu_);
    --running_;
    if (stopping_) {
      cv_.notify_all();
      return;
    }
    if (!worked) {
      cv_.wait_for(lock, kPoll, [&] { return stopping_ || wake_seq_ != seen; });
    }
  }
}

void Workers::RunJob(const ClaimedJob& job) {
  std::shared_ptr<const Config> config;
  std::shared_ptr<const HandlerSet> handlers;
  {
    std::lock_guard lock(mu_);
    config = config_;
    handlers = handlers_;
  }
  auto done = RunAttempt(inbox_, job, *config, *handlers, clock_, AttemptMode::kPool);
  if (!done.ok() && done.status().code() == Status::Code::kUnavailable) {
    std::this_thread::sleep_for(kStorageBackoff);  // storage is down: don't spin
  }
}

}  // namespace hookbox
