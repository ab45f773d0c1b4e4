// Tests of the alert watch (work/alert_watch.h) on a real SQLite inbox in a temporary folder,
// with times passed to Tick() (no sleeping): `backlog` is stored as an event of
// hookbox.alerts once a handler's oldest due job has waited backlog_age, once per repeat
// window, never for a paused handler; `storage_unavailable` is sent straight to its target,
// never stored, once per window, tried again with backoff while the target refuses.
#include "work/alert_watch.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "tests/inbox/forwarding_inbox.h"
#include "work/alerts.h"

using namespace hookbox;
using namespace std::chrono_literals;

namespace {

const TimePoint kT0 = TimePoint(std::chrono::seconds(1'800'000'000));

class FixedClock final : public Clock {
 public:
  TimePoint Now() const override { return kT0; }
};

// An alert's target: records what it was sent, answers `answer`.
class Target final : public Handler {
 public:
  HandlerResult Run(const HandlerEvent& event) override {
    std::lock_guard lock(mu_);
    sent_.push_back(event);
    return {.outcome = answer, .detail = answer == Outcome::kOk ? "" : "503 from the pager"};
  }
  std::chrono::milliseconds timeout() const override { return 10s; }
  std::vector<HandlerEvent> Sent() {
    std::lock_guard lock(mu_);
    return sent_;
  }
  Outcome answer = Outcome::kOk;

 private:
  std::mutex mu_;
  std::vector<HandlerEvent> sent_;
};

Alert MakeAlert(const std::string& name, std::vector<AlertCondition> on) {
  Alert a;
  a.name = name;
  a.on = std::move(on);
  a.backlog_age = 1min;
  a.repeat = 15min;
  return a;
}

// The real inbox, whose handler counts fail while `down` (a database that stopped answering).
class FlakyInbox final : public ForwardingInbox {
 public:
  using ForwardingInbox::ForwardingInbox;
  StatusOr<std::vector<HandlerStatus>> Handlers(TimePoint now, bool count_jobs) override {
    if (down) return Status::Unavailable("database is down");
    return in_.Handlers(now, count_jobs);
  }
  bool down = false;
};

struct Setup {
  Setup() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-alerts-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    auto opened = OpenInbox({dir + "/inbox.db", /*durable=*/false, /*create=*/true});
    REQUIRE(opened.ok());
    inbox = std::move(*opened);
    flaky = std::make_unique<FlakyInbox>(*inbox);
  }
  ~Setup() {
    watch.reset();
    flaky.reset();
    inbox.reset();
    std::filesystem::remove_all(dir);
  }

  void Accept(const std::string& id, const std::vector<std::string>& handlers, TimePoint at) {
    Event e;
    e.endpoint = "shop";
    e.event_id = id;
    e.id_source = "header:X-Id";
    e.event_type = "order.created";
    e.body = "{}";
    e.body_sha256 = "sha-" + id;
    e.headers_json = "{}";
    e.handlers = handlers;
    e.received_at = at;
    REQUIRE(inbox->Accept(e).ok());
  }

  // A config of `alerts` and their handlers, each alert's target one Target.
  std::pair<std::shared_ptr<Config>, std::shared_ptr<HandlerSet>> With(std::vector<Alert> alerts) {
    auto config = std::make_shared<Config>();
    config->alerts = std::move(alerts);
    auto handlers = std::make_shared<HandlerSet>();
    for (const Alert& a : config->alerts) {
      targets[a.name] = std::make_shared<Target>();
      handlers->by_endpoint[std::string(kAlertsEndpoint)][a.name] = targets[a.name];
    }
    return {config, handlers};
  }
  // The watch over `alerts`, on the inbox behind `flaky`.
  AlertWatch& Watch(std::vector<Alert> alerts) {
    auto [config, handlers] = With(std::move(alerts));
    watch = std::make_unique<AlertWatch>(*flaky, *flaky, config, handlers, clock,
                                         [this] { return problem; });
    return *watch;
  }

  int64_t StoredAlerts() {
    auto stats = inbox->Stats();
    REQUIRE(stats.ok());
    int64_t n = 0;
    for (const auto& [status, count] : (*stats)[std::string(kAlertsEndpoint)]) n += count;
    return n;
  }

  std::string dir;
  std::unique_ptr<Inbox> inbox;
  std::unique_ptr<FlakyInbox> flaky;
  FixedClock clock;
  std::string problem;
  std::map<std::string, std::shared_ptr<Target>> targets;
  std::unique_ptr<AlertWatch> watch;
};

}  // namespace

TEST_CASE("alert watch: the backlog check runs a quarter of the smallest backlog_age, 1-30 s") {
  Config c;
  CHECK_FALSE(AlertWatch::BacklogInterval(c));
  c.alerts = {MakeAlert("ops", {AlertCondition::kJobDead})};
  CHECK_FALSE(AlertWatch::BacklogInterval(c));
  c.alerts.push_back(MakeAlert("pager", {AlertCondition::kBacklog}));
  CHECK(AlertWatch::BacklogInterval(c) == 15s);
  c.alerts.back().backlog_age = 10min;
  CHECK(AlertWatch::BacklogInterval(c) == 30s);
  c.alerts.back().backlog_age = 2s;
  CHECK(AlertWatch::BacklogInterval(c) == 1s);
}

TEST_CASE("alert watch: backlog is stored once a handler's oldest due job has waited backlog_age") {
  Setup s;
  Alert ops = MakeAlert("ops", {AlertCondition::kBacklog});
  Alert other = MakeAlert("other", {AlertCondition::kJobDead});
  AlertWatch& watch = s.Watch({ops, other});
  s.Accept("o-1", {"billing", "paused"}, kT0);
  s.Accept("o-2", {"billing"}, kT0 + 20s);
  REQUIRE(s.inbox->SetPaused({{"shop", "paused"}}, true, "maintenance", kT0).ok());

  watch.Tick(kT0 + 59s);  // not yet a minute
  CHECK(s.StoredAlerts() == 0);
  watch.Tick(kT0 + 75s);  // the next check (15 s later): over the age
  CHECK(s.StoredAlerts() == 1);
  const std::string id = "ops:backlog:shop/billing:" + FormatTime(AlertWindow(ops, kT0 + 75s));
  auto shown = s.inbox->Show(std::string(kAlertsEndpoint), id);
  REQUIRE(shown.ok());
  CHECK(shown->row.event_type == "backlog");
  REQUIRE(shown->jobs.size() == 1);
  CHECK(shown->jobs[0].handler == "ops");
  const auto body = nlohmann::json::parse(shown->row.body);
  CHECK(body["alert"] == "backlog");
  CHECK(body["name"] == "ops");
  CHECK(body["endpoint"] == "shop");
  CHECK(body["handler"] == "billing");
  CHECK(body["due"] == 2);
  CHECK(body["oldest_due_at"] == FormatTime(kT0));
  CHECK(body["waited_seconds"] == 75.0);
  CHECK(body["backlog_age_seconds"] == 60.0);
  CHECK(body["detail"] == "2 due jobs, the oldest waiting 75s (backlog_age 1m)");

  // Later checks in the same window are duplicates; the paused handler raised nothing, and
  // the alert's own job (due, waiting) is not a backlog of its own.
  watch.Tick(kT0 + 90s);
  watch.Tick(kT0 + 10min);
  CHECK(s.StoredAlerts() == 1);
  // The next window: the backlog is still there, so it is said again.
  watch.Tick(AlertWindow(ops, kT0) + 15min + 1s);
  CHECK(s.StoredAlerts() == 2);
  // The targets were not called: a stored alert is sent by the dispatcher, as any job.
  CHECK(s.targets["ops"]->Sent().empty());
  CHECK(s.targets["other"]->Sent().empty());
}

TEST_CASE("alert watch: storage_unavailable is sent from memory, once a window, never stored") {
  Setup s;
  Alert ops = MakeAlert("ops", {AlertCondition::kStorageUnavailable});
  Alert quiet = MakeAlert("quiet", {AlertCondition::kBacklog});
  AlertWatch& watch = s.Watch({ops, quiet});
  Target& target = *s.targets["ops"];

  watch.Tick(kT0);  // storage works: nothing
  CHECK(target.Sent().empty());

  s.problem = "storage failing: accept";
  watch.Tick(kT0 + 1s);
  REQUIRE(target.Sent().size() == 1);
  const HandlerEvent sent = target.Sent()[0];
  CHECK(sent.endpoint == kAlertsEndpoint);
  CHECK(sent.event_type == "storage_unavailable");
  CHECK(sent.event_id.rfind("ops:storage_unavailable:", 0) == 0);
  CHECK(sent.event_id.ends_with(":" + FormatTime(AlertWindow(ops, kT0 + 1s))));
  CHECK_FALSE(sent.traceparent.empty());
  const auto body = nlohmann::json::parse(sent.body);
  CHECK(body["alert"] == "storage_unavailable");
  CHECK(body["name"] == "ops");
  CHECK(body["detail"].get<std::string>().rfind("storage failing: accept; sent from memory", 0) ==
        0);
  CHECK_FALSE(body["instance"].get<std::string>().empty());
  CHECK(s.targets["quiet"]->Sent().empty());

  // Still failing, the same window: sent once. Mended and failing again in the window: still
  // once. Nothing of it is in the inbox.
  watch.Tick(kT0 + 2s);
  s.problem.clear();
  watch.Tick(kT0 + 3s);
  s.problem = "storage failing: claim";
  watch.Tick(kT0 + 4s);
  CHECK(target.Sent().size() == 1);
  CHECK(s.StoredAlerts() == 0);
  // The next window: sent again.
  watch.Tick(AlertWindow(ops, kT0) + 15min);
  CHECK(target.Sent().size() == 2);
}

TEST_CASE("alert watch: a refused storage_unavailable is tried again with backoff") {
  Setup s;
  AlertWatch& watch = s.Watch({MakeAlert("ops", {AlertCondition::kStorageUnavailable})});
  Target& target = *s.targets["ops"];
  target.answer = Outcome::kFailed;
  s.problem = "storage failing: accept";
  watch.Tick(kT0);  // try 1 fails: the next in 1 s
  watch.Tick(kT0 + 500ms);
  CHECK(target.Sent().size() == 1);
  watch.Tick(kT0 + 1s);  // try 2 fails: the next in 2 s
  CHECK(target.Sent().size() == 2);
  watch.Tick(kT0 + 2s);
  CHECK(target.Sent().size() == 2);
  target.answer = Outcome::kOk;
  watch.Tick(kT0 + 3s);  // try 3 is taken
  CHECK(target.Sent().size() == 3);
  watch.Tick(kT0 + 10s);
  CHECK(target.Sent().size() == 3);
  // Every try had the same id: a target that dedupes on webhook-id shows one alert.
  const auto sent = target.Sent();
  CHECK(sent[0].event_id == sent[2].event_id);
}

TEST_CASE("alert watch: a reload's new backlog alert is checked; a failed read raises nothing") {
  Setup s;
  AlertWatch& watch = s.Watch({});
  s.Accept("o-1", {"billing"}, kT0);
  watch.Tick(kT0 + 2min);  // no alert configured: no check
  CHECK(s.StoredAlerts() == 0);
  auto [config, handlers] = s.With({MakeAlert("ops", {AlertCondition::kBacklog})});
  watch.Swap(config, handlers);
  // The database does not answer: no alert, no crash, and the next check asks again.
  s.flaky->down = true;
  watch.Tick(kT0 + 3min);
  s.flaky->down = false;
  CHECK(s.StoredAlerts() == 0);
  watch.Tick(kT0 + 3min + 15s);
  CHECK(s.StoredAlerts() == 1);
}
