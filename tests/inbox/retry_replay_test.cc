// The Inbox contract, retries and the bulk verbs (inbox.h: Retry, PlanBulk, RetryDead,
// Replay): a retry waiting for its time, a dead row's jobs re-armed with a fresh budget,
// `inbox retry --dead` and `inbox replay` over a filter, in batches and spread by a rate,
// and a replay's new generation as a sql handler sees it. Part of the storage contract
// suite, on SQLite and PostgreSQL (tests/inbox/contract.h).
#include <catch2/catch.hpp>
#include <functional>
#include <map>

#include "handlers/sql/sql.h"
#include "inbox/inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

TEST_CASE("retry waits for next_attempt_at; dead jobs are re-armed by Retry") {
  TestInbox t;
  Accept(t, MakeEvent("r"));
  auto job = Claim(t, kT0);
  REQUIRE(job.size() == 1);
  JobOutcome retry;
  retry.outcome = Outcome::kFailed;
  retry.detail = "exit 3";
  retry.next = JobOutcome::Next::kRetry;
  retry.next_attempt_at = kT0 + 30s;
  retry.finished_at = kT0 + 1s;
  REQUIRE(t->FinishJob(job[0], retry).ok());
  CHECK(Claim(t, kT0 + 29s).empty());
  auto again = Claim(t, kT0 + 30s);
  REQUIRE(again.size() == 1);
  CHECK(again[0].budget_used == 2);
  JobOutcome dead = retry;
  dead.outcome = Outcome::kPermanent;
  dead.next = JobOutcome::Next::kDead;
  REQUIRE(t->FinishJob(again[0], dead).ok());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'dead'") == 1);
  CHECK(Claim(t, kT0 + 1h).empty());

  auto rearmed = t->Retry("ep", "r", kT0 + 2h);
  REQUIRE(rearmed.ok());
  CHECK(*rearmed == 1);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'pending'") == 1);
  auto third = Claim(t, kT0 + 2h);
  REQUIRE(third.size() == 1);
  CHECK(third[0].budget_used == 1);    // a fresh budget
  CHECK(third[0].event.attempt == 3);  // the history goes on
  CHECK(t->Retry("ep", "r", kT0).status().code() == Status::Code::kInvalidArgument);
  CHECK(t->Retry("ep", "nope", kT0).status().code() == Status::Code::kNotFound);
}

// ---- The bulk verbs: `inbox retry --dead` and `inbox replay` over a filter.

namespace {

JobOutcome Dead(TimePoint at) {
  JobOutcome o = Done(at);
  o.outcome = Outcome::kPermanent;
  o.detail = "gone";
  o.next = JobOutcome::Next::kDead;
  return o;
}

// Claims everything due at `now` and finishes each job as `finish` says (nullopt: keep it).
void RunAll(TestInbox& t, TimePoint now,
            const std::function<std::optional<JobOutcome>(const ClaimedJob&)>& finish) {
  for (int round = 0; round < 100; ++round) {
    auto jobs = Claim(t, now, 100);
    if (jobs.empty()) return;
    for (const ClaimedJob& j : jobs) {
      if (auto o = finish(j)) REQUIRE(t->FinishJob(j, *o).ok());
    }
  }
  FAIL("jobs kept coming");
}

BulkRequest Bulk(BulkVerb verb, TimePoint now, const std::string& endpoint = "ep",
                 const std::string& handler = "") {
  BulkRequest r;
  r.verb = verb;
  r.filter.endpoint = endpoint;
  r.filter.handler = handler;
  r.now = now;
  return r;
}

}  // namespace

TEST_CASE("bulk retry: re-arms only the dead jobs of matching rows, fresh budget, history kept") {
  TestInbox t;
  for (const char* id : {"d1", "d2", "ok", "both"}) {
    REQUIRE(Accept(t, MakeEvent(id, id == std::string("both") ? std::vector<std::string>{"h", "k"}
                                                              : std::vector<std::string>{"h"})) ==
            Verdict::kAccepted);
  }
  Event other = MakeEvent("x1");
  other.endpoint = "other";
  REQUIRE(Accept(t, other) == Verdict::kAccepted);
  // d1, d2, other's x1 and both/h die; ok is done; both/k keeps running (a live lease).
  std::optional<ClaimedJob> running;
  RunAll(t, kT0, [&](const ClaimedJob& j) -> std::optional<JobOutcome> {
    if (j.event.event_id == "ok") return Done(kT0);
    if (j.handler == "k") {
      running = j;
      return std::nullopt;
    }
    return Dead(kT0);
  });
  REQUIRE(running);

  auto plan = t->PlanBulk(Bulk(BulkVerb::kRetryDead, kT0 + 30s));
  REQUIRE(plan.ok());
  CHECK(plan->matched == 4);
  CHECK(plan->rows == 3);
  CHECK(plan->jobs == 3);
  CHECK(plan->jobs_by_handler == std::map<std::string, int64_t>{{"ep/h", 3}});
  CHECK(plan->skipped_no_job == 1);  // ok
  CHECK(plan->oldest == FormatTime(kT0));
  CHECK(plan->newest == FormatTime(kT0));
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'dead'") ==
        4);  // the plan changed nothing

  auto rearmed = t->RetryDead(Bulk(BulkVerb::kRetryDead, kT0 + 30s));
  REQUIRE(rearmed.ok());
  CHECK(*rearmed == 3);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'dead'") == 1);  // other's, not matched
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE endpoint = 'ep' AND status = 'pending'") == 3);
  // The running job of `both` kept its lease; its row is pending with a job to run.
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE handler = 'k' AND status = 'processing'"
                " AND lease_token = '" +
                running->lease_token + "'") == 1);

  // A repeat finds nothing dead: no harm.
  auto again = t->RetryDead(Bulk(BulkVerb::kRetryDead, kT0 + 30s));
  REQUIRE(again.ok());
  CHECK(*again == 0);

  auto claimed = Claim(t, kT0 + 30s, 100);
  REQUIRE(claimed.size() == 3);
  for (const ClaimedJob& j : claimed) {
    CHECK(j.budget_used == 1);       // a fresh budget
    CHECK(j.event.attempt == 2);     // the history goes on
    CHECK(j.event.generation == 0);  // the same run: the same idempotency key
    CHECK(j.event.IdempotencyKey() == "ep:" + j.event.event_id);
  }
  // Claimed (live leases): a retry now re-arms none of them.
  auto busy = t->RetryDead(Bulk(BulkVerb::kRetryDead, kT0 + 30s));
  REQUIRE(busy.ok());
  CHECK(*busy == 0);
  for (const ClaimedJob& j : claimed) REQUIRE(t->FinishJob(j, Done(kT0 + 30s)).ok());
  auto shown = t->Show("ep", "d1");
  REQUIRE(shown.ok());
  REQUIRE(shown->jobs.size() == 1);
  CHECK(shown->jobs[0].attempt_rows.size() == 2);
  CHECK(shown->jobs[0].attempt_rows[0].outcome == "permanent");
  CHECK(shown->jobs[0].attempt_rows[1].outcome == "ok");
  CHECK(shown->row.status == "processed");
}

TEST_CASE("bulk retry of one handler leaves another handler's dead job, and its row dead") {
  TestInbox t;
  REQUIRE(Accept(t, MakeEvent("two", {"h", "k"})) == Verdict::kAccepted);
  RunAll(t, kT0, [&](const ClaimedJob&) { return std::optional<JobOutcome>(Dead(kT0)); });
  auto rearmed = t->RetryDead(Bulk(BulkVerb::kRetryDead, kT0, "ep", "k"));
  REQUIRE(rearmed.ok());
  CHECK(*rearmed == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE handler = 'h' AND status = 'dead'") == 1);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'dead'") == 1);
  auto rest = t->RetryDead(Bulk(BulkVerb::kRetryDead, kT0, "ep"));
  REQUIRE(rest.ok());
  CHECK(*rest == 1);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'pending'") == 1);
}

TEST_CASE("bulk retry in small batches and spread by a rate: the i-th job due at now + i/rate") {
  TestInbox t;
  for (int i = 0; i < 5; ++i)
    REQUIRE(Accept(t, MakeEvent("e" + std::to_string(i))) == Verdict::kAccepted);
  RunAll(t, kT0, [&](const ClaimedJob&) { return std::optional<JobOutcome>(Dead(kT0)); });
  BulkRequest r = Bulk(BulkVerb::kRetryDead, kT0 + 1h);
  r.rate = 2;   // 2/s: due at +0, +0.5, +1, +1.5, +2 s
  r.batch = 2;  // three writes of at most two jobs
  auto rearmed = t->RetryDead(r);
  REQUIRE(rearmed.ok());
  CHECK(*rearmed == 5);
  CHECK(Claim(t, kT0 + 1h, 100).size() == 1);
  CHECK(Claim(t, kT0 + 1h + 999ms, 100).size() == 1);
  CHECK(Claim(t, kT0 + 1h + 1s, 100).size() == 1);
  auto last = Claim(t, kT0 + 1h + 2s, 100);
  REQUIRE(last.size() == 2);
  // In received order (by row): the oldest rows first.
  CHECK(last.back().event.event_id == "e4");
}

TEST_CASE(
    "replay: a new generation with a new key, history kept; stale, ignored, unfinished skipped") {
  TestInbox t;
  REQUIRE(Accept(t, MakeEvent("a", {"h", "k"})) == Verdict::kAccepted);
  REQUIRE(Accept(t, MakeEvent("b", {"h"})) == Verdict::kAccepted);
  REQUIRE(Accept(t, MakeEvent("dead", {"h"})) == Verdict::kAccepted);
  REQUIRE(Accept(t, MakeEvent("new", {"h"}, "R", 5)) == Verdict::kAccepted);
  REQUIRE(Accept(t, MakeEvent("old", {"h"}, "R", 4)) == Verdict::kStale);
  REQUIRE(Accept(t, MakeEvent("none", {})) == Verdict::kIgnored);
  REQUIRE(Accept(t, MakeEvent("other", {"k"})) == Verdict::kAccepted);
  RunAll(t, kT0, [&](const ClaimedJob& j) {
    return std::optional<JobOutcome>(j.event.event_id == "dead" ? Dead(kT0) : Done(kT0));
  });

  CHECK(t->PlanBulk(Bulk(BulkVerb::kReplay, kT0)).status().code() ==
        Status::Code::kInvalidArgument);  // which handler?
  auto plan = t->PlanBulk(Bulk(BulkVerb::kReplay, kT0 + 1h, "ep", "h"));
  REQUIRE(plan.ok());
  CHECK(plan->matched == 7);
  CHECK(plan->rows == 3);  // a, b, new
  CHECK(plan->jobs_by_handler == std::map<std::string, int64_t>{{"ep/h", 3}});
  CHECK(plan->skipped_stale == 1);
  CHECK(plan->skipped_ignored == 1);
  CHECK(plan->skipped_no_job == 2);  // dead (its h job is dead), other (no h job)

  auto replayed = t->Replay(Bulk(BulkVerb::kReplay, kT0 + 1h, "ep", "h"));
  REQUIRE(replayed.ok());
  CHECK(*replayed == 3);
  // While the replay waits to run, a repeat finds no done job: no second generation.
  auto again = t->Replay(Bulk(BulkVerb::kReplay, kT0 + 1h, "ep", "h"));
  REQUIRE(again.ok());
  CHECK(*again == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'pending'") == 3);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE handler = 'k' AND generation = 0"
                " AND status = 'done'") == 2);  // the other handler's jobs are not run again

  auto claimed = Claim(t, kT0 + 1h, 100);
  REQUIRE(claimed.size() == 3);
  for (const ClaimedJob& j : claimed) {
    CHECK(j.handler == "h");
    CHECK(j.event.generation == 1);
    CHECK(j.event.IdempotencyKey() == "ep/replay-1:" + j.event.event_id);
    CHECK(j.budget_used == 1);
    CHECK(j.event.attempt == 2);
    REQUIRE(t->FinishJob(j, Done(kT0 + 1h)).ok());
  }
  auto shown = t->Show("ep", "a");
  REQUIRE(shown.ok());
  CHECK(shown->row.status == "processed");
  const JobRow& h = shown->jobs[0];
  CHECK(h.handler == "h");
  CHECK(h.generation == 1);
  REQUIRE(h.attempt_rows.size() == 2);
  CHECK(h.attempt_rows[0].generation == 0);
  CHECK(h.attempt_rows[1].generation == 1);

  // Once that run is done, a second replay is generation 2.
  auto second = t->Replay(Bulk(BulkVerb::kReplay, kT0 + 2h, "ep", "h"));
  REQUIRE(second.ok());
  CHECK(*second == 3);
  auto gen2 = Claim(t, kT0 + 2h, 100);
  REQUIRE(gen2.size() == 3);
  CHECK(gen2[0].event.IdempotencyKey() == "ep/replay-2:" + gen2[0].event.event_id);
}

TEST_CASE("replay of a resource's rows runs them again one at a time, in received order") {
  TestInbox t;
  for (int i = 1; i <= 3; ++i) {
    REQUIRE(Accept(t, MakeEvent("r" + std::to_string(i), {"h"}, "R", i)) == Verdict::kAccepted);
  }
  RunAll(t, kT0, [&](const ClaimedJob&) { return std::optional<JobOutcome>(Done(kT0)); });
  BulkRequest r = Bulk(BulkVerb::kReplay, kT0 + 1h, "ep", "h");
  auto replayed = t->Replay(r);
  REQUIRE(replayed.ok());
  REQUIRE(*replayed == 3);
  for (int i = 1; i <= 3; ++i) {
    auto one = Claim(t, kT0 + 1h, 100);
    REQUIRE(one.size() == 1);
    CHECK(one[0].event.event_id == "r" + std::to_string(i));
    CHECK(Claim(t, kT0 + 1h, 100).empty());  // the next waits for this one
    REQUIRE(t->FinishJob(one[0], Done(kT0 + 1h)).ok());
  }
}

TEST_CASE("sql handler: :generation is 0 in the first run, n after n replays") {
  TestInbox t;
  SqlWork sql;
  sql.setup = {
      "CREATE TABLE IF NOT EXISTS runs (event_id TEXT, generation INTEGER, first INTEGER)"};
  // :generation twice, once compared with a number: an integer on both backends.
  sql.statements = {
      "INSERT INTO runs VALUES (:event_id, :generation,"
      " CASE WHEN :generation = 0 THEN 1 ELSE 0 END)"};
  REQUIRE(t->PrepareWork(sql).ok());
  REQUIRE(Accept(t, MakeEvent("g1", {"h"})) == Verdict::kAccepted);
  auto run = [&](TimePoint at) {
    auto jobs = Claim(t, at);
    REQUIRE(jobs.size() == 1);
    auto recorded = t->FinishJob(jobs[0], Done(at), &sql, nullptr);
    REQUIRE(recorded.ok());
    CHECK(*recorded == Outcome::kOk);
  };
  run(kT0);
  for (int n = 1; n <= 2; ++n) {
    auto replayed = t->Replay(Bulk(BulkVerb::kReplay, kT0 + n * 1h, "ep", "h"));
    REQUIRE(replayed.ok());
    REQUIRE(*replayed == 1);
    run(kT0 + n * 1h);
  }
  CHECK(t.Count("SELECT count(*) FROM runs") == 3);
  CHECK(t.Count("SELECT count(*) FROM runs WHERE event_id = 'g1' AND generation = 0"
                " AND first = 1") == 1);
  CHECK(t.Count("SELECT count(*) FROM runs WHERE generation = 1 AND first = 0") == 1);
  CHECK(t.Count("SELECT count(*) FROM runs WHERE generation = 2 AND first = 0") == 1);
}
