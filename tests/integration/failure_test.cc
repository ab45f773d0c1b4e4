// Hard failures of the machine, met for real: a full disk under the database (a size-limited
// tmpfs mounted for the test, as root) and clients that send what no producer would. Each
// gets its documented answer, leaves nothing half-written, and the daemon recovers without
// a restart.
#include <netinet/in.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::ReadFile;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

namespace {

// A tmpfs of `size` bytes at `path` for the life of the object. Needs root (CI runs as root).
class SmallDisk {
 public:
  SmallDisk(const std::string& path, const std::string& size) : path_(path) {
    std::filesystem::create_directories(path);
    mounted_ = ::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  std::string path_;
  bool mounted_ = false;
};

}  // namespace

TEST_CASE("disk full: 503 with nothing half-written, and recovery once space is freed") {
  TempDir dir;
  SmallDisk disk(dir / "small", "3M");
  INFO("mounting a tmpfs needs root");
  REQUIRE(disk.mounted());
  // Leave the database little room; the filler is what the operator frees later.
  WriteFile(dir / "small/filler", std::string(1200 * 1024, 'f'));
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DIR}/small/inbox.db
workers: 0
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
)");
  std::set<std::string> accepted;
  std::string refused;
  const std::string pad(30 * 1024, 'p');
  for (int i = 0; i < 400 && refused.empty(); ++i) {
    const std::string id = "big-" + std::to_string(i);
    auto r = d.Post("/hooks/open", {}, json{{"id", id}, {"pad", pad}}.dump());
    REQUIRE(r);
    if (r->status == 200) {
      accepted.insert(id);
    } else {
      CHECK(r->status == 503);
      CHECK(json::parse(r->body).contains("error"));
      refused = id;
    }
  }
  REQUIRE_FALSE(refused.empty());  // the disk did fill up
  CHECK(accepted.size() > 5);
  // Still full: more 503s, no crash, health still answers.
  for (int i = 0; i < 5; ++i) {
    auto r =
        d.Post("/hooks/open", {}, json{{"id", "more-" + std::to_string(i)}, {"pad", pad}}.dump());
    REQUIRE(r);
    CHECK(r->status == 503);
  }
  httplib::Client admin("127.0.0.1", d.admin_port());
  auto health = admin.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);

  // The operator frees space; the producer's retry is accepted, no restart needed.
  std::filesystem::remove(dir / "small/filler");
  auto retried = d.Post("/hooks/open", {}, json{{"id", refused}, {"pad", pad}}.dump());
  REQUIRE(retried);
  CHECK(retried->status == 200);
  CHECK(json::parse(retried->body)["status"] == "ignored");  // stored (no routes here)
  accepted.insert(refused);

  // Exactly the events answered 200 are stored; nothing of the refused ones.
  json rows = d.Rows();
  std::set<std::string> stored;
  for (const json& r : rows) stored.insert(r["event_id"].get<std::string>());
  CHECK(stored == accepted);
  CHECK(hookbox::testing::RunSqlite(d.db(), "PRAGMA integrity_check") == "ok\n");
  CHECK(d.Kill(SIGTERM) == 0);
}

TEST_CASE("event ids with control characters cannot forge log lines") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: gh
    path: /hooks/gh
    verify: none
)");
  // A header can't carry a newline, but a path can carry anything percent-encoded; an
  // unknown path is logged too.
  httplib::Client cli("127.0.0.1", d.port());
  auto r = cli.Post("/hooks/x%0A%7B%22level%22%3A%22forged%22%7D", "{}", "application/json");
  REQUIRE(r);
  CHECK(r->status == 404);
  for (const std::string& line : [&] {
         std::vector<std::string> lines;
         std::istringstream in(d.Log());
         for (std::string l; std::getline(in, l);) lines.push_back(l);
         return lines;
       }()) {
    INFO(line);
    auto j = json::parse(line, nullptr, false);
    CHECK(j.is_object());  // every line is one whole JSON object
    CHECK(j.value("level", "") != "forged");
  }
}

namespace {

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True when the server closed `fd` within `limit` (reads until EOF).
bool ClosedByServer(int fd, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[512];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("slow clients: hundreds of half-sent requests do not hold up real deliveries") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
limits: {max_body: 64KiB, read_timeout: 2s, threads: 4}
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
)");
  // 300 connections that send half a request head and stop (slowloris), and 30 that
  // trickle a byte at a time.
  std::vector<int> stalled, trickling;
  for (int i = 0; i < 300; ++i) {
    int fd = Connect(d.port());
    REQUIRE(fd >= 0);
    const std::string half = "POST /hooks/open HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    send(fd, half.data(), half.size(), MSG_NOSIGNAL);
    stalled.push_back(fd);
  }
  for (int i = 0; i < 30; ++i) trickling.push_back(Connect(d.port()));
  std::atomic<bool> trickle{true};
  std::thread trickler([&] {
    const std::string head =
        "POST /hooks/open HTTP/1.1\r\nHost: x\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaa";
    for (size_t at = 0; trickle && at < head.size(); ++at) {
      for (int fd : trickling) send(fd, head.data() + at, 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  // Real deliveries, each on a new connection, answered within the read timeout.
  int answered = 0;
  for (int i = 0; i < 20; ++i) {
    httplib::Client cli("127.0.0.1", d.port());
    cli.set_read_timeout(std::chrono::seconds(2));
    auto r = cli.Post("/hooks/open", json{{"id", "real-" + std::to_string(i)}}.dump(),
                      "application/json");
    answered += r && r->status == 200;
  }
  CHECK(answered == 20);
  // The slow connections are closed once they ran past the read timeout.
  size_t closed = 0;
  for (int fd : stalled) closed += ClosedByServer(fd, std::chrono::seconds(6)) ? 1 : 0;
  CHECK(closed == stalled.size());
  trickle = false;
  trickler.join();
  for (int fd : trickling) CHECK(ClosedByServer(fd, std::chrono::seconds(6)));
  for (int fd : stalled) close(fd);
  for (int fd : trickling) close(fd);
  CHECK(d.Log().find("connections closed at the edge") != std::string::npos);
  CHECK(d.Rows().size() == 20);
}

TEST_CASE("a request head larger than 64 KiB is refused with 431 and closed") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - {name: open, path: /hooks/open, verify: none}
)");
  std::string head = "POST /hooks/open HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 80; ++i)
    head += "X-Big-" + std::to_string(i) + ": " + std::string(1000, 'b') + "\r\n";
  std::string answer = d.Raw(head + "Content-Length: 2\r\n\r\n{}");
  CHECK(answer.rfind("HTTP/1.1 431", 0) == 0);
  CHECK(d.Rows().empty());
}

TEST_CASE("a connection flood is bounded by limits.max_connections and logged") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
limits: {read_timeout: 1s, threads: 2, max_connections: 20}
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
)");
  std::vector<int> flood;
  for (int i = 0; i < 60; ++i) flood.push_back(Connect(d.port()));
  // Past the bound, each new connection takes the place of the oldest one waiting (closed at
  // once); the last 20 wait out the read timeout.
  size_t closed_early = 0;
  for (int fd : flood) closed_early += ClosedByServer(fd, std::chrono::milliseconds(300)) ? 1 : 0;
  CHECK(closed_early >= 30);
  CHECK(hookbox::testing::Eventually(
      [&] { return d.Log().find("\"refused_over_limit\"") != std::string::npos; }));
  // Once the flood has timed out, deliveries are answered again.
  bool answered = hookbox::testing::Eventually([&] {
    httplib::Client cli("127.0.0.1", d.port());
    auto r = cli.Post("/hooks/open", R"({"id":"after-flood"})", "application/json");
    return r && r->status == 200;
  });
  CHECK(answered);
  for (int fd : flood) close(fd);
}
