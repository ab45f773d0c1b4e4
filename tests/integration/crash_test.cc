// The crash test: producers deliver under load while the daemon is killed with SIGKILL at
// random moments and restarted, many rounds; producers retry whatever was not answered 200,
// as real ones do. Then the invariants are checked:
//   - every delivery answered 200 is in the inbox;
//   - every accepted event ends processed (or stale: an older sequence of its resource);
//   - no two jobs of one resource ever ran at once (the handler holds a non-blocking flock
//     per resource while it runs and records any overlap it sees; it execs its sleep, so
//     the lock is held by hookbox's own child, which dies with the daemon, and not by a
//     grandchild, which would outlive it. The child's death, though, is a SIGKILL that the
//     kernel sends as the daemon dies and that the child acts on when it next runs: on a
//     loaded machine, later than the restarted daemon's first claim. So after each kill the
//     test waits, as systemd does (it empties the unit's control group before a restart),
//     until every lock is free: the killed daemon's children are gone);
//   - `sql` side effects happened exactly once per event;
//   - PRAGMA integrity_check is ok.
// HOOKBOX_CRASH_ROUNDS sets the number of kills (default 3 in `make test`; `make crash-test`
// runs many more). `heartbeat_timeout: 2s`: each restart runs the killed daemon's jobs again
// 2 s after its last heartbeat (work/liveness.h), not when their leases run out.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::ReadFile;
using hookbox::testing::RunSqlite;
using hookbox::testing::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A loopback port free right now (the daemon binds it again after every restart).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);  // port 0: any free port
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// Waits (bounded) until no process holds the lock of any order: the children of a killed
// daemon have exited. False if one still holds a lock after 10 s.
bool LocksFree(const TempDir& dir, int orders) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (int o = 0; o < orders; ++o) {
    const std::string path = dir / ("lock-order-" + std::to_string(o));
    for (;;) {
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return false;
      const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
      ::close(fd);  // releases the lock taken, if any
      if (free) break;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
  }
  return true;
}

int Rounds() {
  const char* env = std::getenv("HOOKBOX_CRASH_ROUNDS");
  return env && *env ? std::max(1, std::atoi(env)) : 3;
}

}  // namespace

TEST_CASE("crash test: SIGKILL at random moments under load keeps every invariant", "[crash]") {
  TempDir dir;
  const int port = FreePort();
  Daemon d(dir, R"yaml(
listen: 127.0.0.1:)yaml" +
                    std::to_string(port) + R"yaml(
admin_listen: ""
database: {DB}
workers: 3
heartbeat_timeout: 2s
endpoints:
  - name: orders
    path: /hooks/orders
    verify: none
    event_id: body:/id
    resource: body:/order
    sequence: body:/seq
    retry: {max_attempts: 100, base: 10ms, max: 200ms}
    routes:
      - events: ["*"]
        handlers:
          - exec:
              command: [/bin/sh, -c, 'exec 9>>{DIR}/lock-$HOOKBOX_RESOURCE; flock -n 9 || echo "$HOOKBOX_EVENT_ID" >> {DIR}/overlaps; exec sleep 0.02']
              timeout: 10s
          - sql:
              setup: ["CREATE TABLE IF NOT EXISTS effects (event_id TEXT NOT NULL)"]
              statements: ["INSERT INTO effects VALUES (:event_id)"]
)yaml");

  constexpr int kOrders = 4, kPerOrder = 25;
  std::mutex mu;
  std::set<std::string> answered;  // ids that got a 200
  std::atomic<bool> producing{true};
  std::vector<std::thread> producers;
  for (int o = 0; o < kOrders; ++o) {
    producers.emplace_back([&, o] {
      for (int s = 1; s <= kPerOrder; ++s) {
        json body = {{"id", "o" + std::to_string(o) + "-" + std::to_string(s)},
                     {"order", "order-" + std::to_string(o)},
                     {"seq", s}};
        // A producer retries until it is told 200, however long the daemon is down.
        for (int tries = 0; tries < 2000; ++tries) {
          httplib::Client cli("127.0.0.1", port);
          cli.set_connection_timeout(1s);
          cli.set_read_timeout(10s);
          auto r = cli.Post("/hooks/orders", body.dump(), "application/json");
          if (r && r->status == 200) {
            std::lock_guard lock(mu);
            answered.insert(body["id"]);
            break;
          }
          std::this_thread::sleep_for(20ms);
        }
      }
    });
  }

  std::mt19937 rng(std::random_device{}());
  const int rounds = Rounds();
  for (int round = 0; round < rounds; ++round) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 400)(rng)));
    REQUIRE(d.Kill(SIGKILL) == 128 + SIGKILL);
    REQUIRE(LocksFree(dir, kOrders));
    d.Start();
  }
  for (auto& p : producers) p.join();
  producing = false;
  REQUIRE(answered.size() == kOrders * kPerOrder);

  // Every accepted event ends processed or stale.
  json rows;
  REQUIRE(hookbox::testing::Eventually(
      [&] {
        rows = d.Rows();
        size_t settled = 0;
        for (const json& r : rows) settled += r["status"] == "processed" || r["status"] == "stale";
        return settled == rows.size();
      },
      120s));
  std::set<std::string> stored;
  size_t processed = 0;
  for (const json& r : rows) {
    stored.insert(r["event_id"].get<std::string>());
    processed += r["status"] == "processed";
  }
  for (const std::string& id : answered) {
    INFO(id);
    CHECK(stored.count(id) == 1);
  }
  // sql side effects: exactly once per processed event, none for stale ones.
  CHECK(RunSqlite(d.db(), "SELECT count(*) || ' ' || count(DISTINCT event_id) FROM effects") ==
        std::to_string(processed) + " " + std::to_string(processed) + "\n");
  CHECK(ReadFile(dir / "overlaps") == "");  // the overlapping ids, if any
  CHECK(RunSqlite(d.db(), "PRAGMA integrity_check") == "ok\n");
  INFO("rounds survived: " << rounds << ", events: " << answered.size()
                           << ", processed: " << processed);
  CHECK(processed > 0);
}
