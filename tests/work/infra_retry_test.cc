// Tests of infrastructure failures of handlers (HandlerResult::infrastructure: the daemon ran
// out of descriptors or processes before the handler started): DecideNext retries them
// after the short infra delay and never makes the job dead, and RunAttempt on a real inbox
// records the attempt, gives its try back to the job's budget, and counts it in
// hookbox_handler_infra_failures_total. The inbox is a temporary SQLite file; with
// HOOKBOX_TEST_DATABASE set to the URL of an empty PostgreSQL database the same tests run
// against PostgreSQL instead.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "inbox/inbox.h"
#include "ops/daemon_metrics.h"
#include "work/attempt.h"
#include "work/backoff.h"

using namespace hookbox;
using namespace std::chrono_literals;

namespace {

HandlerResult InfraFailure() {
  HandlerResult r{Outcome::kFailed, "cannot create pipes: Too many open files", {}};
  r.infrastructure = true;
  return r;
}

class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint t) : now_(t) {}
  TimePoint Now() const override { return now_; }
  void Advance(std::chrono::milliseconds d) { now_ += d; }

 private:
  TimePoint now_;
};

// Answers what the test sets next.
class ScriptedHandler final : public Handler {
 public:
  HandlerResult next;
  int runs = 0;
  HandlerResult Run(const HandlerEvent&) override {
    ++runs;
    return next;
  }
  std::chrono::milliseconds timeout() const override { return 1s; }
};

struct Setup {
  Setup() {
    if (const char* url = std::getenv("HOOKBOX_TEST_DATABASE"); url && *url) {
      database = url;
    } else {
      std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-infra-XXXXXX").string();
      dir = mkdtemp(tmpl.data());
      database = dir + "/inbox.db";
    }
    auto opened = OpenInbox({database, /*durable=*/false, /*create=*/true});
    INFO(opened.status().ToString());
    REQUIRE(opened.ok());
    inbox = std::move(*opened);

    Endpoint ep;
    ep.name = "ep";
    ep.retry = RetryPolicy{1, 10s, 1h};  // one try: a counted failure would make it dead
    config.endpoints.push_back(ep);
    handler = std::make_shared<ScriptedHandler>();
    handlers.by_endpoint["ep"]["h"] = handler;
    handlers.longest_timeout = 1s;
  }
  ~Setup() {
    inbox.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }

  // A new event with one job for handler "h", received now.
  std::string Accept() {
    static std::atomic<int> n{0};
    Event e;
    e.endpoint = "ep";
    e.event_id = "infra-" + std::to_string(getpid()) + "-" + std::to_string(++n);
    e.id_source = "header:X-Id";
    e.event_type = "thing.happened";
    e.body = "{}";
    e.body_sha256 = "sha";
    e.headers_json = "{}";
    e.handlers = {"h"};
    e.received_at = clock.Now();
    auto r = inbox->Accept(e);
    REQUIRE(r.ok());
    REQUIRE(r->verdict == Verdict::kAccepted);
    return e.event_id;
  }

  // Claims the one due job (of `id`) and runs one attempt of it.
  JobOutcome Attempt(const std::string& id) {
    auto claimed = inbox->ClaimJobs("test:1:w0", 10, clock.Now(), 60s);
    REQUIRE(claimed.ok());
    REQUIRE(claimed->size() == 1);
    REQUIRE(claimed->front().event.event_id == id);
    auto done = RunAttempt(*inbox, claimed->front(), config, handlers, clock, AttemptMode::kPool);
    INFO(done.status().ToString());
    REQUIRE(done.ok());
    return *done;
  }

  JobRow Job(const std::string& id) {
    auto shown = inbox->Show("ep", id);
    REQUIRE(shown.ok());
    REQUIRE(shown->jobs.size() == 1);
    return shown->jobs.front();
  }

  // How many jobs a worker could claim now (expected 0: a claim would be a try).
  size_t Due() {
    auto claimed = inbox->ClaimJobs("test:1:peek", 10, clock.Now(), 1ms);
    REQUIRE(claimed.ok());
    return claimed->size();
  }

  std::string dir, database;
  std::unique_ptr<Inbox> inbox;
  Config config;
  HandlerSet handlers;
  std::shared_ptr<ScriptedHandler> handler;
  FakeClock clock{std::chrono::system_clock::now()};
};

}  // namespace

TEST_CASE("infra: DecideNext retries soon, whatever the tries used, and refunds the try") {
  RetryPolicy p{3, 10s, 1h};
  std::mt19937_64 rng(5);
  const TimePoint now{std::chrono::seconds(1000)};
  for (int tries : {1, 3, 50}) {
    for (int i = 0; i < 200; ++i) {
      JobOutcome o = DecideNext(InfraFailure(), tries, p, now, rng);
      REQUIRE(o.next == JobOutcome::Next::kRetry);
      REQUIRE(o.refund_try);
      REQUIRE(o.outcome == Outcome::kFailed);
      REQUIRE(o.next_attempt_at - now >= kInfraRetryMin);
      REQUIRE(o.next_attempt_at - now <= kInfraRetryMax);
    }
  }
  // Without the flag nothing changes: the last allowed try is dead, and no try is refunded.
  JobOutcome plain = DecideNext({Outcome::kFailed, "exit 1", {}}, 3, p, now, rng);
  CHECK(plain.next == JobOutcome::Next::kDead);
  CHECK_FALSE(plain.refund_try);
  CHECK_FALSE(DecideNext({Outcome::kFailed, "exit 1", {}}, 1, p, now, rng).refund_try);
  // The flag on a success means nothing.
  HandlerResult ok{Outcome::kOk, "exit 0", {}};
  ok.infrastructure = true;
  CHECK(DecideNext(ok, 1, p, now, rng).next == JobOutcome::Next::kDone);
}

TEST_CASE("infra: an attempt that could not start is retried without spending the budget") {
  Setup s;
  const std::string id = s.Accept();
  auto& infra = Metrics().handler_infra_failures.With({"ep", "h"});
  auto& failed = Metrics().attempts.With({"ep", "h", "failed"});
  const uint64_t infra_before = infra.Value();
  const uint64_t failed_before = failed.Value();

  // max_attempts is 1, yet three infrastructure failures in a row leave the job pending.
  for (int i = 1; i <= 3; ++i) {
    INFO("infra failure " << i);
    s.handler->next = InfraFailure();
    JobOutcome o = s.Attempt(id);
    CHECK(o.next == JobOutcome::Next::kRetry);
    CHECK(o.refund_try);
    JobRow job = s.Job(id);
    CHECK(job.status == "pending");
    CHECK(job.attempts == 0);  // the budget is untouched
    // Recorded as history, with the errno's text.
    REQUIRE(job.attempt_rows.size() == static_cast<size_t>(i));
    CHECK(job.attempt_rows.back().outcome == "failed");
    CHECK(job.attempt_rows.back().detail == "cannot create pipes: Too many open files");
    // Not due before the short infra delay, due after it.
    CHECK(s.Due() == 0);
    s.clock.Advance(kInfraRetryMax + 1ms);
  }
  CHECK(infra.Value() == infra_before + 3);
  CHECK(failed.Value() == failed_before + 3);
  CHECK(s.handler->runs == 3);

  // Then the handler runs: ok, on the job's first counted try.
  s.handler->next = {Outcome::kOk, "exit 0", {}};
  CHECK(s.Attempt(id).next == JobOutcome::Next::kDone);
  JobRow job = s.Job(id);
  CHECK(job.status == "done");
  CHECK(job.attempts == 1);
  CHECK(job.attempt_rows.size() == 4);
  CHECK(infra.Value() == infra_before + 3);
}

TEST_CASE("infra: an ordinary failure still spends the budget (control)") {
  Setup s;
  const std::string id = s.Accept();
  s.handler->next = {Outcome::kFailed, "exit 1", {}};
  JobOutcome o = s.Attempt(id);
  CHECK(o.next == JobOutcome::Next::kDead);  // max_attempts 1
  CHECK_FALSE(o.refund_try);
  JobRow job = s.Job(id);
  CHECK(job.status == "dead");
  CHECK(job.attempts == 1);
}
