// hookbox as a systemd service (Type=notify): state notifications (READY, RELOADING,
// STOPPING, STATUS), the watchdog, and socket activation. Everything is a no-op outside
// systemd (no NOTIFY_SOCKET, no WATCHDOG_USEC, no LISTEN_FDS), so the same binary runs from
// a shell, a test or a unit. libsystemd (sd-daemon) does the protocol work.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace hookbox {

// Sends newline-separated assignments ("READY=1\nSTATUS=...") to $NOTIFY_SOCKET. Does nothing
// when the variable is unset; failures are logged, never fatal.
void NotifySystemd(const std::string& state);

// "MONOTONIC_USEC=<now>": systemd wants it with RELOADING=1 to tell reloads apart.
std::string MonotonicUsec();

// The watchdog timeout systemd set for this process (WATCHDOG_USEC, and WATCHDOG_PID if set
// naming this process); nullopt when the watchdog is off.
std::optional<std::chrono::microseconds> WatchdogTimeout();

// The listening sockets systemd passed to this process (LISTEN_FDS with LISTEN_PID naming
// it), as fds from 3 up, close-on-exec. Unsets LISTEN_* so nothing started later takes them
// for its own. Empty without socket activation.
std::vector<int> TakeListenFds();

// Sends WATCHDOG=1 every half `timeout`, but only when `healthy()` says the daemon is alive;
// when it stops saying so, systemd's timer runs out and it restarts the service. Logs each
// change between healthy and not. healthy() runs on the watchdog's own thread and may block:
// a hang there is exactly what should stop the pings.
class Watchdog final {
 public:
  Watchdog(std::chrono::microseconds timeout, std::function<bool()> healthy);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Stops pinging and joins the thread. Safe to call twice.
  void Stop();

 private:
  void Loop(std::chrono::microseconds interval);

  std::function<bool()> healthy_;
  std::mutex mu_;  // guards stopping_
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hookbox
