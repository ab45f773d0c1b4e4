// The day a downstream breaks (README "After an outage"), end to end through real HTTP: an
// `http` handler's target is down, the operator pauses the handler, 1,000 signed GitHub
// deliveries arrive and are stored with nothing attempted; the target comes back, the operator
// adds `rate: 100/s` (a reload) and resumes; every event reaches the downstream exactly once,
// under its own idempotency key, and none is dead. Then rows killed on purpose (the downstream
// refused them) are re-armed by one bulk retry, and 100 rows are replayed: the downstream sees
// each replay under its new key, once.
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <set>

#include "daemon.h"

namespace {

using hookbox::testing::AnswerLine;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::GithubSigned;
using hookbox::testing::LoopbackServer;
using hookbox::testing::TempDir;
using nlohmann::json;

// The service behind the handler: records the Idempotency-Key of every request it answers
// 200, answers 503 while down, and 400 (permanent: the job goes dead at once) to keys it is
// told to refuse.
class Downstream {
 public:
  int port() const { return server_.port(); }
  void SetDown(bool down) {
    std::lock_guard lock(mu_);
    down_ = down;
  }
  void Refuse(std::set<std::string> keys) {
    std::lock_guard lock(mu_);
    refused_ = std::move(keys);
  }
  int requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  std::map<std::string, int> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  bool down_ = true;
  std::set<std::string> refused_;
  std::map<std::string, int> seen_;
  int requests_ = 0;
  LoopbackServer server_{[this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    const std::string key = req.get_header_value("Idempotency-Key");
    ++requests_;
    if (down_) {
      res.status = 503;
    } else if (refused_.count(key)) {
      res.status = 400;
    } else {
      res.status = 200;
      ++seen_[key];
    }
  }};  // last: it serves until destroyed first, while the state above still lives
};

std::string Config(int downstream_port, const std::string& rate) {
  return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 8
endpoints:
  - name: gh
    path: /hooks/gh
    provider: github
    secrets: [{value: outage-secret}]
    retry: {max_attempts: 3, base: 100ms, max: 1s}
    routes:
      - events: ["*"]
        handlers:
          - name: orders
            http:
              url: http://127.0.0.1:)" +
         std::to_string(downstream_port) + R"(/orders
              timeout: 5s
              concurrency: 8)" +
         rate + "\n";
}

// Rows of the endpoint by status, from `hookbox stats --json`.
std::map<std::string, int64_t> Statuses(const Daemon& d) {
  auto r = d.Cli({"stats", "--json"});
  REQUIRE(r.exit_code == 0);
  std::map<std::string, int64_t> out;
  json stats = json::parse(r.out);
  if (stats.contains("gh")) {
    for (auto& [status, n] : stats["gh"].items()) out[status] = n.get<int64_t>();
  }
  return out;
}

// POSTs one signed delivery; true when it is accepted.
bool Deliver(const Daemon& d, const std::string& id, const std::string& type) {
  const std::string body = json{{"action", type}, {"n", id}}.dump();
  return AnswerLine(d.Post("/hooks/gh", GithubSigned("outage-secret", body, id, type), body)) ==
         "200 accepted";
}

}  // namespace

TEST_CASE("outage: pause, 1,000 deliveries, resume at 100/s; bulk retry; replay of 100") {
  TempDir dir;
  Downstream downstream;  // down from the start
  Daemon d(dir, Config(downstream.port(), ""));

  // The downstream is down: the operator pauses its handler before anything burns tries.
  auto paused = d.Cli({"handler", "pause", "gh/orders", "--reason", "orders API down"});
  INFO(paused.out << paused.err);
  REQUIRE(paused.exit_code == 0);

  constexpr int kEvents = 1000;
  for (int i = 0; i < kEvents; ++i) {
    REQUIRE(Deliver(d, "ev-" + std::to_string(i), i < 100 ? "order.paid" : "order.created"));
  }
  // Stored, and nothing attempted: a paused handler's jobs stay pending.
  CHECK(Statuses(d)["pending"] == kEvents);
  CHECK(downstream.requests() == 0);
  auto listed = d.Cli({"handler", "list", "--json"});
  REQUIRE(listed.exit_code == 0);
  INFO(listed.out);
  CHECK(listed.out.find("orders API down") != std::string::npos);

  // The downstream is back. The operator limits the handler to 100/s (a reload keeps the
  // handler's name: only its target names it) and resumes it.
  downstream.SetDown(false);
  d.WriteConfig(Config(downstream.port(), "\n              rate: 100/s"));
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] { return d.LogCount("reloaded") >= 1; }));
  auto resumed = d.Cli({"handler", "resume", "gh/orders"});
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.exit_code == 0);

  // 1,000 jobs at 100/s: about ten seconds. The bound only stops a broken run.
  REQUIRE(
      Eventually([&] { return Statuses(d)["processed"] == kEvents; }, std::chrono::seconds(120)));
  auto seen = downstream.seen();
  CHECK(seen.size() == static_cast<size_t>(kEvents));
  for (int i = 0; i < kEvents; ++i) {
    CHECK(seen["gh:ev-" + std::to_string(i)] == 1);
  }
  CHECK(Statuses(d)["dead"] == 0);

  // Rows killed on purpose: the downstream refuses 20 new deliveries (400 is permanent).
  std::set<std::string> refused;
  for (int i = 0; i < 20; ++i) refused.insert("gh:bad-" + std::to_string(i));
  downstream.Refuse(refused);
  for (int i = 0; i < 20; ++i) REQUIRE(Deliver(d, "bad-" + std::to_string(i), "order.created"));
  REQUIRE(Eventually([&] { return Statuses(d)["dead"] == 20; }, std::chrono::seconds(60)));

  // The plan first: a dry run changes nothing, and without --yes nothing is done either.
  auto plan = d.Cli({"inbox", "retry", "--dead", "--endpoint", "gh", "--dry-run"});
  INFO(plan.out << plan.err);
  CHECK(plan.exit_code == 0);
  CHECK(plan.out.find("20") != std::string::npos);
  auto unconfirmed = d.Cli({"inbox", "retry", "--dead", "--endpoint", "gh"});
  CHECK(unconfirmed.exit_code == 2);
  CHECK(Statuses(d)["dead"] == 20);

  downstream.Refuse({});
  auto retried = d.Cli({"inbox", "retry", "--dead", "--endpoint", "gh", "--yes"});
  INFO(retried.out << retried.err);
  REQUIRE(retried.exit_code == 0);
  REQUIRE(Eventually([&] { return Statuses(d)["processed"] == kEvents + 20; },
                     std::chrono::seconds(60)));
  seen = downstream.seen();
  for (const std::string& key : refused) CHECK(seen[key] == 1);  // its idempotency key kept

  // A replay of the 100 `order.paid` rows: each reaches the downstream once more, under a
  // key the original run did not use, and the originals are not sent again.
  auto replayed = d.Cli({"inbox", "replay", "--endpoint", "gh", "--type", "order.paid", "--handler",
                         "orders", "--yes"});
  INFO(replayed.out << replayed.err);
  REQUIRE(replayed.exit_code == 0);
  REQUIRE(Eventually([&] { return downstream.seen().size() == kEvents + 20 + 100; },
                     std::chrono::seconds(60)));
  REQUIRE(Eventually([&] { return Statuses(d)["processed"] == kEvents + 20; }));
  seen = downstream.seen();
  for (int i = 0; i < kEvents; ++i) {
    const std::string id = "ev-" + std::to_string(i);
    CHECK(seen["gh:" + id] == 1);
    if (i < 100) CHECK(seen["gh/replay-1:" + id] == 1);
  }
  CHECK(Statuses(d)["dead"] == 0);
}
