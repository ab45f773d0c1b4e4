// End-to-end tests of the listener's room and memory under a flood, on the real daemon:
// one client holding more idle connections than max_connections, with a slow-body client
// beside it, cannot keep signed deliveries from a third client from being answered (the
// flood's connections give up their places: idle ones first, then the ones incomplete the
// longest; and one address's own at max_connections_per_peer); and 4,096 connections each
// sending max_body - 1 bytes of a body keep the daemon's memory under max_buffered plus a
// fixed overhead (past the budget nothing is read). The clients come from different
// loopback addresses (127.0.0.2, .3), so that each is a peer of its own, as on the internet.
// This process raises its own open-file limit for its thousands of sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::GithubSigned;
using hookbox::testing::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* kSecret = "gh-secret-for-listener-limits";

// Raises this process's soft open-file limit to its hard one; false when even that cannot
// hold `needed` descriptors.
bool RoomForSockets(rlim_t needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur >= needed;
}

// A connection to 127.0.0.1:port from `source` (a loopback address: a peer of its own);
// -1 when it cannot be made.
int ConnectFrom(const char* source, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sockets closed together when the test ends.
struct Sockets {
  std::vector<int> fds;
  ~Sockets() { CloseAll(); }
  void CloseAll() {
    for (int fd : fds) close(fd);
    fds.clear();
  }
  // Opens `n` more from `source`; how many could be opened.
  size_t Open(const char* source, int port, size_t n) {
    size_t opened = 0;
    for (size_t i = 0; i < n; ++i) {
      const int fd = ConnectFrom(source, port);
      if (fd < 0) continue;
      fds.push_back(fd);
      ++opened;
    }
    return opened;
  }
};

// A signed GitHub delivery from 127.0.0.1 on a new connection: its status (0: no answer)
// and how long the answer took.
std::pair<int, std::chrono::milliseconds> Deliver(int port, const std::string& id) {
  const std::string body = json{{"id", id}}.dump();
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(2s);
  cli.set_read_timeout(2s);
  const auto started = std::chrono::steady_clock::now();
  auto r = cli.Post("/hooks/github", GithubSigned(kSecret, body, id), body, "application/json");
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  return {r ? r->status : 0, took};
}

// The pid of the `hookbox serve` started with this config file (its path is unique to the
// test's directory); -1 when there is none.
pid_t DaemonPid(const std::string& config_path) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream file(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (cmdline.find(std::string("serve") + '\0') != std::string::npos &&
        cmdline.find(config_path + '\0') != std::string::npos) {
      return std::stoi(name);
    }
  }
  return -1;
}

// A /proc/PID/status field in KiB (VmRSS, VmHWM); 0 when absent.
size_t StatusKib(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoul(line.substr(field.size() + 1));
  }
  return 0;
}

}  // namespace

TEST_CASE("one client's idle connections and a slow body cannot keep deliveries out",
          "[listener][limits]") {
  if (!RoomForSockets(5000)) {
    WARN("the open-file limit cannot hold 5,000 sockets: not checked");
    return;
  }
  // read_timeout is longer than the test: no connection is cut for being slow, only to make
  // room. The per-peer cap is set per section.
  auto config = [](const std::string& per_peer) {
    return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
limits: {read_timeout: 30s, threads: 4, max_connections: 4096)" +
           per_peer + R"(}
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{value: "gh-secret-for-listener-limits"}]
)";
  };
  std::string per_peer;
  SECTION("with no per-peer cap (as behind a proxy): the flood gives up its own places") {
    per_peer = ", max_connections_per_peer: 0";
  }
  SECTION("with the default per-peer cap: the flood displaces only itself") { per_peer = ""; }
  TempDir dir;
  Daemon d(dir, config(per_peer));
  Sockets flood, slow;
  // One client holds 4,100 idle sockets (more than max_connections) ...
  REQUIRE(flood.Open("127.0.0.2", d.port(), 4100) == 4100);
  // ... and another, at the limit, trickles bodies it never finishes.
  REQUIRE(slow.Open("127.0.0.3", d.port(), 8) == 8);
  const std::string head =
      "POST /hooks/github HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{";
  for (int fd : slow.fds) REQUIRE(send(fd, head.data(), head.size(), MSG_NOSIGNAL) > 0);
  // Six signed deliveries from a third, one after another, while the flood opens 100 more
  // idle sockets before each: every one answered 200 within 2 s.
  for (int i = 0; i < 6; ++i) {
    flood.Open("127.0.0.2", d.port(), 100);
    for (int fd : slow.fds) send(fd, " ", 1, MSG_NOSIGNAL);
    const auto [status, took] = Deliver(d.port(), "delivery-" + std::to_string(i));
    INFO("delivery " << i << " took " << took.count() << " ms");
    CHECK(status == 200);
    CHECK(took < 2s);
  }
  CHECK(d.Rows().size() == 6);
  // The places were made, and said so.
  CHECK(d.WaitForLog("connections closed at the edge"));
  CHECK(d.Log().find("\"displaced_over_limit\":0,") == std::string::npos);
}

TEST_CASE("4,096 connections each holding max_body - 1 bytes stay under max_buffered",
          "[listener][limits]") {
  if (!RoomForSockets(4096 + 400)) {
    WARN("the open-file limit cannot hold 4,500 sockets: not checked");
    return;
  }
  // max_body 32 KiB: 4,096 bodies of 32 KiB are 128 MiB unbounded; the budget is 4 MiB.
  constexpr size_t kMaxBody = 32 * 1024;
  constexpr size_t kBudgetKib = 4 * 1024;
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
limits: {max_body: 32KiB, max_buffered: 4MiB, read_timeout: 10m, threads: 4,
         max_connections: 4096, max_connections_per_peer: 0}
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
)");
  const pid_t pid = DaemonPid(d.config_path());
  REQUIRE(pid > 0);
  // The fixed part: the daemon at rest with 4,096 idle connections.
  Sockets flood;
  REQUIRE(flood.Open("127.0.0.2", d.port(), 4096) == 4096);
  std::this_thread::sleep_for(300ms);  // no condition to poll: let accept settle
  const size_t at_rest_kib = StatusKib(pid, "VmRSS");
  REQUIRE(at_rest_kib > 0);

  // Each connection sends a head announcing max_body bytes, then max_body - 1 of them.
  const std::string request =
      "POST /hooks/open HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(kMaxBody) +
      "\r\n\r\n" + std::string(kMaxBody - 1, 'x');
  std::vector<size_t> sent(flood.fds.size(), 0);
  size_t whole = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (whole < flood.fds.size() && std::chrono::steady_clock::now() < deadline) {
    whole = 0;
    for (size_t i = 0; i < flood.fds.size(); ++i) {
      if (sent[i] < request.size()) {
        const ssize_t n = send(flood.fds[i], request.data() + sent[i], request.size() - sent[i],
                               MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) sent[i] += static_cast<size_t>(n);
      }
      whole += sent[i] == request.size() ? 1 : 0;
    }
  }
  INFO("connections that sent all their bytes: " << whole);
  REQUIRE(whole == flood.fds.size());
  // Settled: the daemon read what it would (the sweep reports the paused connections).
  CHECK(d.WaitForLog("connections closed at the edge", 1, 10s));
  std::this_thread::sleep_for(500ms);
  const size_t peak_kib = StatusKib(pid, "VmHWM");
  INFO("RSS at rest " << at_rest_kib << " KiB, peak " << peak_kib << " KiB");
  // Under the budget plus a fixed 16 MiB (threads' buffers, the allocator's slack).
  CHECK(peak_kib < at_rest_kib + kBudgetKib + 16 * 1024);

  // The flood hangs up: the budget is free again, at once rather than at the parked
  // connections' read_timeout (10 minutes here; a delivery's client gives up after 30 s),
  // and a delivery is answered.
  flood.CloseAll();
  CHECK(hookbox::testing::Eventually(
      [&] {
        auto r = d.Post("/hooks/open", {}, R"({"id":"after"})");
        return r && r->status == 200;
      },
      10s));
  CHECK(hookbox::testing::Eventually(
      [&] {
        int64_t hung_up = 0;
        for (const auto& line : d.LogLines("connections closed at the edge")) {
          hung_up += line.value("paused_then_hung_up", int64_t{0});
        }
        return hung_up > 0;
      },
      5s));
}
