// Unit tests of the systemd glue against a fake NOTIFY_SOCKET: a unix datagram socket made
// by the test, which is all systemd's side of the protocol is. Also the environment checks
// of the watchdog and socket activation (LISTEN_PID must name this process).
#include "ops/systemd.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "tests/ops/fake_notify_socket.h"

using namespace hookbox;

namespace {

// The fake socket, set as this process's NOTIFY_SOCKET while it lives.
class NotifyScope : public hookbox::testing::FakeNotifySocket {
 public:
  NotifyScope() { setenv("NOTIFY_SOCKET", path().c_str(), 1); }
  ~NotifyScope() { unsetenv("NOTIFY_SOCKET"); }
};

}  // namespace

TEST_CASE("notifications reach the socket named by NOTIFY_SOCKET") {
  NotifyScope systemd;
  NotifySystemd("READY=1\nSTATUS=listening");
  CHECK(systemd.Receive() == "READY=1\nSTATUS=listening");
  NotifySystemd("RELOADING=1\n" + MonotonicUsec());
  std::string reloading = systemd.Receive();
  CHECK(reloading.rfind("RELOADING=1\nMONOTONIC_USEC=", 0) == 0);
}

TEST_CASE("without NOTIFY_SOCKET notifying does nothing") {
  unsetenv("NOTIFY_SOCKET");
  NotifySystemd("READY=1");  // no socket, no error, no crash
}

TEST_CASE("the watchdog timeout is read only when it is meant for this process") {
  setenv("WATCHDOG_USEC", "200000", 1);
  unsetenv("WATCHDOG_PID");
  CHECK(WatchdogTimeout() == std::chrono::microseconds(200000));
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  CHECK(WatchdogTimeout() == std::chrono::microseconds(200000));
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);
  CHECK_FALSE(WatchdogTimeout());
  unsetenv("WATCHDOG_PID");
  unsetenv("WATCHDOG_USEC");
  CHECK_FALSE(WatchdogTimeout());
}

TEST_CASE("the watchdog pings only once the daemon says it is healthy") {
  NotifyScope systemd;
  std::atomic<int> checks{0};
  std::atomic<bool> became_healthy{false};
  Watchdog watchdog(std::chrono::milliseconds(20), [&] {
    // Unhealthy for the first three checks: no ping may arrive before the fourth.
    if (++checks < 4) return false;
    became_healthy = true;
    return true;
  });
  CHECK(systemd.Receive() == "WATCHDOG=1");
  CHECK(became_healthy);
  CHECK(checks >= 4);
  CHECK(systemd.Receive() == "WATCHDOG=1");  // and it keeps pinging
  watchdog.Stop();
  watchdog.Stop();  // twice is fine
}

TEST_CASE("socket activation takes fds only when LISTEN_PID names this process") {
  setenv("LISTEN_FDS", "1", 1);
  setenv("LISTEN_PID", std::to_string(getpid() + 1).c_str(), 1);
  CHECK(TakeListenFds().empty());
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_PID");
  CHECK(TakeListenFds().empty());
  CHECK(std::getenv("LISTEN_FDS") == nullptr);
}
