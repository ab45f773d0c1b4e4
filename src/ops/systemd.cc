// systemd notifications, watchdog and socket activation through libsystemd (see systemd.h).
#include "ops/systemd.h"

#include <systemd/sd-daemon.h>
#include <time.h>

#include <cstdlib>
#include <cstring>

#include "ops/log.h"

namespace hookbox {

void NotifySystemd(const std::string& state) {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (!socket || !*socket) return;
  int r = sd_notify(0, state.c_str());
  if (r < 0) {
    LogWarn({{"msg", "cannot notify systemd"}, {"error", std::strerror(-r)}});
  }
}

std::string MonotonicUsec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return "MONOTONIC_USEC=" + std::to_string(static_cast<uint64_t>(ts.tv_sec) * 1000000 +
                                            static_cast<uint64_t>(ts.tv_nsec) / 1000);
}

std::optional<std::chrono::microseconds> WatchdogTimeout() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::microseconds(usec);
}

std::vector<int> TakeListenFds() {
  int n = sd_listen_fds(/*unset_environment=*/1);
  if (n < 0) {
    LogWarn({{"msg", "ignoring LISTEN_FDS"}, {"error", std::strerror(-n)}});
    return {};
  }
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) fds.push_back(SD_LISTEN_FDS_START + i);
  return fds;
}

Watchdog::Watchdog(std::chrono::microseconds timeout, std::function<bool()> healthy)
    : healthy_(std::move(healthy)) {
  thread_ = std::thread([this, timeout] { Loop(timeout / 2); });
}

Watchdog::~Watchdog() { Stop(); }

void Watchdog::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::Loop(std::chrono::microseconds interval) {
  bool was_healthy = true;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const bool healthy = healthy_();
    if (healthy) NotifySystemd("WATCHDOG=1");
    if (healthy != was_healthy) {
      if (healthy)
        LogInfo({{"msg", "healthy again: watchdog pings resume"}});
      else
        LogError(
            {{"msg", "unhealthy: watchdog pings stop until the listener and the inbox answer"}});
      was_healthy = healthy;
    }
    lock.lock();
    cv_.wait_for(lock, interval, [this] { return stopping_; });
  }
}

}  // namespace hookbox
