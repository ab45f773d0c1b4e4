// The day a downstream breaks (README "After an outage"), end to end through real HTTP and
// the real CLI, in the README's order: an `http` handler's target fails, some jobs die (it
// refused them) and some wait in backoff (the downstream's `Retry-After: 3600`); the operator
// pauses the handler, lists what died and why, and 1,000 signed GitHub deliveries arrive and are
// stored with nothing attempted. The target comes back: `rate: 100/s` (a reload), resume, the
// backlog reaches the downstream once per event under its own idempotency key; the waiting
// jobs are run now (`inbox retry --waiting`), the dead ones re-armed (`inbox retry --dead`),
// 100 rows replayed under their new key, and the handler, renamed while paused, is forgotten.
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
// 200, answers 400 (permanent: the job goes dead at once) to keys it is told to refuse, and
// 503 with `Retry-After: 3600` to the others while down.
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
    if (refused_.count(key)) {
      res.status = 400;
    } else if (down_) {
      // As a service down for a while says it: the retry then waits the hour for certain,
      // not a full-jitter draw in [0, 1h] that now and then comes due within the test.
      res.status = 503;
      res.set_header("Retry-After", "3600");
    } else {
      res.status = 200;
      ++seen_[key];
    }
  }};  // last: it serves until destroyed first, while the state above still lives
};

// The handler named `name`; `rate` is "" or the line the operator adds. Retries back off an
// hour (the downstream's Retry-After, within `retry: max`): only `inbox retry --waiting`
// runs them sooner.
std::string Config(int downstream_port, const std::string& rate,
                   const std::string& name = "orders") {
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
    retry: {max_attempts: 3, base: 1h, max: 1h}
    routes:
      - events: ["*"]
        handlers:
          - name: )" +
         name + R"(
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

// Runs one CLI command of the walk-through; its output is shown when a check fails.
hookbox::testing::CliResult Step(const Daemon& d, const std::vector<std::string>& args) {
  auto r = d.Cli(args);
  UNSCOPED_INFO(args[0] << " " << args[1] << ": " << r.out << r.err);
  return r;
}

}  // namespace

TEST_CASE("outage: the README's day, verb by verb, with 1,000 deliveries") {
  TempDir dir;
  Downstream downstream;  // down from the start
  Daemon d(dir, Config(downstream.port(), ""));

  // Before anyone notices: 20 deliveries the downstream refuses (dead at once) and 20 it
  // fails with 503 (tried once, then waiting an hour in backoff).
  std::set<std::string> refused;
  for (int i = 0; i < 20; ++i) refused.insert("gh:bad-" + std::to_string(i));
  downstream.Refuse(refused);
  for (int i = 0; i < 20; ++i) {
    REQUIRE(Deliver(d, "bad-" + std::to_string(i), "order.created"));
    REQUIRE(Deliver(d, "early-" + std::to_string(i), "order.created"));
  }
  REQUIRE(Eventually([&] { return Statuses(d)["dead"] == 20 && downstream.requests() == 40; },
                     std::chrono::seconds(60)));

  // hookbox handler pause gh/orders --reason "orders API down"
  REQUIRE(Step(d, {"handler", "pause", "gh/orders", "--reason", "orders API down"}).exit_code == 0);
  // hookbox handler list
  auto listed = Step(d, {"handler", "list"});
  REQUIRE(listed.exit_code == 0);
  CHECK(listed.out.find("paused") != std::string::npos);
  CHECK(listed.out.find("orders API down") != std::string::npos);

  // hookbox inbox list --status dead --endpoint gh: what died, of which handler, and why.
  auto dead = Step(d, {"inbox", "list", "--status", "dead", "--endpoint", "gh"});
  REQUIRE(dead.exit_code == 0);
  CHECK(dead.out.find("HANDLER") != std::string::npos);
  CHECK(dead.out.find("LAST ERROR") != std::string::npos);
  size_t dead_lines = 0;
  for (size_t at = dead.out.find("HTTP 400"); at != std::string::npos;
       at = dead.out.find("HTTP 400", at + 1)) {
    ++dead_lines;
  }
  CHECK(dead_lines == 20);
  CHECK(dead.out.find("more row") == std::string::npos);  // all 20 fit the default limit

  // Deliveries keep being accepted and stored; nothing of the paused handler runs.
  constexpr int kEvents = 1000;
  for (int i = 0; i < kEvents; ++i) {
    REQUIRE(Deliver(d, "ev-" + std::to_string(i), i < 100 ? "order.paid" : "order.created"));
  }
  CHECK(Statuses(d)["pending"] == kEvents);
  CHECK(downstream.requests() == 40);

  // The downstream is back. The operator limits the handler to 100/s (a reload keeps the
  // handler's name) and resumes it: hookbox handler resume gh/orders
  downstream.SetDown(false);
  d.WriteConfig(Config(downstream.port(), "\n              rate: 100/s"));
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] { return d.LogCount("reloaded") >= 1; }));
  REQUIRE(Step(d, {"handler", "resume", "gh/orders"}).exit_code == 0);

  // 1,000 jobs at 100/s: about ten seconds. The bound only stops a broken run.
  REQUIRE(
      Eventually([&] { return Statuses(d)["processed"] == kEvents; }, std::chrono::seconds(120)));
  auto seen = downstream.seen();
  CHECK(seen.size() == static_cast<size_t>(kEvents));
  for (int i = 0; i < kEvents; ++i) CHECK(seen["gh:ev-" + std::to_string(i)] == 1);
  // The backed-off ones still wait out their hour.
  CHECK(seen.count("gh:early-0") == 0);

  // hookbox inbox retry --waiting --endpoint gh --dry-run, then --rate 50/s --yes
  auto waiting_plan = Step(d, {"inbox", "retry", "--waiting", "--endpoint", "gh", "--dry-run"});
  CHECK(waiting_plan.exit_code == 0);
  CHECK(waiting_plan.out.find("20") != std::string::npos);
  CHECK(waiting_plan.out.find("running") != std::string::npos);  // the handler's state
  CHECK(downstream.seen().count("gh:early-0") == 0);             // a dry run changes nothing
  REQUIRE(Step(d, {"inbox", "retry", "--waiting", "--endpoint", "gh", "--rate", "50/s", "--yes"})
              .exit_code == 0);
  REQUIRE(Eventually([&] { return Statuses(d)["processed"] == kEvents + 20; },
                     std::chrono::seconds(60)));
  seen = downstream.seen();
  for (int i = 0; i < 20; ++i) CHECK(seen["gh:early-" + std::to_string(i)] == 1);

  // The handler's bug that refused the 20 is fixed: the plan first (a dry run changes
  // nothing; without --yes nothing is done either), then the re-arm.
  downstream.Refuse({});
  auto plan = Step(d, {"inbox", "retry", "--dead", "--endpoint", "gh", "--dry-run"});
  CHECK(plan.exit_code == 0);
  CHECK(plan.out.find("20") != std::string::npos);
  CHECK(Step(d, {"inbox", "retry", "--dead", "--endpoint", "gh"}).exit_code == 2);
  CHECK(Statuses(d)["dead"] == 20);
  REQUIRE(Step(d, {"inbox", "retry", "--dead", "--endpoint", "gh", "--rate", "50/s", "--yes"})
              .exit_code == 0);
  REQUIRE(Eventually([&] { return Statuses(d)["processed"] == kEvents + 40; },
                     std::chrono::seconds(60)));
  seen = downstream.seen();
  for (const std::string& key : refused) CHECK(seen[key] == 1);  // its idempotency key kept

  // hookbox inbox replay --endpoint gh --handler orders --type 'order.paid' --since 1d --yes:
  // each of the 100 reaches the downstream once more, under a key the first run did not use.
  REQUIRE(Step(d, {"inbox", "replay", "--endpoint", "gh", "--handler", "orders", "--type",
                   "order.paid", "--since", "1d", "--yes"})
              .exit_code == 0);
  REQUIRE(Eventually([&] { return downstream.seen().size() == kEvents + 40 + 100; },
                     std::chrono::seconds(60)));
  REQUIRE(Eventually([&] { return Statuses(d)["processed"] == kEvents + 40; }));
  seen = downstream.seen();
  for (int i = 0; i < kEvents; ++i) {
    const std::string id = "ev-" + std::to_string(i);
    CHECK(seen["gh:" + id] == 1);
    if (i < 100) CHECK(seen["gh/replay-1:" + id] == 1);
  }
  CHECK(Statuses(d)["dead"] == 0);

  // Later the handler is paused for a migration and renamed `fulfil`: the old name's pause
  // stays in `handler list` (not-configured) until hookbox handler forget gh/orders
  REQUIRE(Step(d, {"handler", "pause", "gh/orders", "--reason", "moving to fulfil"}).exit_code ==
          0);
  d.WriteConfig(Config(downstream.port(), "\n              rate: 100/s", "fulfil"));
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] { return d.LogCount("reloaded") >= 2; }));
  auto renamed = Step(d, {"handler", "list"});
  CHECK(renamed.out.find("gh/orders") != std::string::npos);
  CHECK(renamed.out.find("not-configured") != std::string::npos);
  REQUIRE(Step(d, {"handler", "forget", "gh/orders"}).exit_code == 0);
  auto forgotten = Step(d, {"handler", "list"});
  CHECK(forgotten.out.find("gh/orders") == std::string::npos);
  CHECK(forgotten.out.find("gh/fulfil") != std::string::npos);
}
