// The storage contract: what every Inbox backend must do. One suite for both backends: ctest
// runs this binary twice, on a fresh SQLite file per test (`inbox`) and, with
// HOOKBOX_TEST_BACKEND=postgres, on a fresh database of the throwaway PostgreSQL cluster per
// test (`inbox_postgres`). Raw-SQL checks go through TestInbox::Count, which asks the
// backend's own database as an operator would (sqlite3 / psql), in SQL both understand.
// Times are passed in explicitly, so lease expiry and backoff are tested without sleeping.
#include "inbox/inbox.h"

#include <sqlite3.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <thread>

#include "inbox/filter.h"
#include "tests/inbox/test_inbox.h"

namespace {

using namespace hookbox;
using namespace std::chrono_literals;

const TimePoint kT0 = TimePoint(std::chrono::seconds(1'800'000'000));

Event MakeEvent(const std::string& id, std::vector<std::string> handlers = {"h"},
                const std::string& resource = "", std::optional<int64_t> seq = std::nullopt,
                const std::string& body = "{}") {
  Event e;
  e.endpoint = "ep";
  e.event_id = id;
  e.id_source = "header:X-Id";
  e.event_type = "thing.happened";
  e.resource_id = resource;
  e.sequence_key = seq;
  e.sequence = seq ? std::to_string(*seq) : "";
  e.body = body;
  e.body_sha256 = "sha-of-" + body;
  e.headers_json = "{}";
  e.handlers = std::move(handlers);
  e.received_at = kT0;
  return e;
}

Verdict Accept(TestInbox& t, const Event& e) {
  auto r = t->Accept(e);
  REQUIRE(r.ok());
  return r->verdict;
}

std::vector<ClaimedJob> Claim(TestInbox& t, TimePoint now, int max = 10,
                              std::chrono::milliseconds lease = 60s) {
  auto c = t->ClaimJobs("test-worker", max, now, lease);
  REQUIRE(c.ok());
  return *c;
}

JobOutcome Done(TimePoint at) {
  JobOutcome o;
  o.finished_at = at;
  return o;
}

}  // namespace

TEST_CASE("accept stores once; duplicates are counted on the original row") {
  TestInbox t;
  CHECK(Accept(t, MakeEvent("a")) == Verdict::kAccepted);
  CHECK(Accept(t, MakeEvent("a")) == Verdict::kDuplicate);
  auto changed = t->Accept(MakeEvent("a", {"h"}, "", std::nullopt, "{\"other\":1}"));
  REQUIRE(changed.ok());
  CHECK(changed->verdict == Verdict::kDuplicate);
  CHECK(changed->body_changed);
  CHECK(t.Count("SELECT count(*) FROM inbox") == 1);
  CHECK(t.Count("SELECT duplicates FROM inbox") == 2);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 1);
}

TEST_CASE("strict_body: same id, other body is a Conflict and changes nothing") {
  TestInbox t;
  Event e = MakeEvent("a");
  e.strict_body = true;
  CHECK(Accept(t, e) == Verdict::kAccepted);
  Event other = MakeEvent("a", {"h"}, "", std::nullopt, "{\"x\":2}");
  other.strict_body = true;
  auto r = t->Accept(other);
  CHECK(r.status().code() == Status::Code::kConflict);
  CHECK(t.Count("SELECT duplicates FROM inbox") == 0);
  CHECK(Accept(t, e) == Verdict::kDuplicate);  // the same body still is a duplicate
}

TEST_CASE("dedupe body: a new id with a stored body is the stored event's duplicate") {
  TestInbox t;
  auto with_body_dedupe = [](Event e) {
    e.dedupe_body = true;
    return e;
  };
  const std::string body = R"({"action":"opened"})";
  auto first = t->Accept(with_body_dedupe(MakeEvent("d-1", {"h1", "h2"}, "", std::nullopt, body)));
  REQUIRE(first.ok());
  CHECK(first->verdict == Verdict::kAccepted);
  CHECK(first->duplicate_of.empty());

  // The same body under fresh ids: duplicates of d-1, counted there, nothing stored.
  for (const char* fresh : {"d-2", "d-3"}) {
    auto r = t->Accept(with_body_dedupe(MakeEvent(fresh, {"h1", "h2"}, "", std::nullopt, body)));
    REQUIRE(r.ok());
    CHECK(r->verdict == Verdict::kDuplicate);
    CHECK(r->duplicate_of == "d-1");
    CHECK_FALSE(r->body_changed);
  }
  // Also with a resource and a lower sequence: a duplicate is never stale, and moves no gate.
  auto gated = t->Accept(with_body_dedupe(MakeEvent("d-4", {"h1"}, "r", 1, body)));
  REQUIRE(gated.ok());
  CHECK(gated->verdict == Verdict::kDuplicate);
  CHECK(gated->duplicate_of == "d-1");
  CHECK(t.Count("SELECT count(*) FROM inbox") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 2);
  CHECK(t.Count("SELECT duplicates FROM inbox WHERE event_id = 'd-1'") == 3);
  CHECK(t.Count("SELECT count(*) FROM sequences") == 0);

  // A stored id is a duplicate by id (no duplicate_of), even when its body matches.
  auto by_id = t->Accept(with_body_dedupe(MakeEvent("d-1", {"h1", "h2"}, "", std::nullopt, body)));
  REQUIRE(by_id.ok());
  CHECK(by_id->verdict == Verdict::kDuplicate);
  CHECK(by_id->duplicate_of.empty());
  CHECK(t.Count("SELECT duplicates FROM inbox WHERE event_id = 'd-1'") == 4);

  // Another body is a new event; another endpoint's identical body is not looked at.
  CHECK(Accept(t, with_body_dedupe(MakeEvent("d-5", {"h1"}, "", std::nullopt, "{}"))) ==
        Verdict::kAccepted);
  Event elsewhere = with_body_dedupe(MakeEvent("d-6", {"h1"}, "", std::nullopt, body));
  elsewhere.endpoint = "other";
  CHECK(Accept(t, elsewhere) == Verdict::kAccepted);

  // Without dedupe_body (the default, dedupe: [id]) the body is not a key.
  CHECK(Accept(t, MakeEvent("d-7", {"h1"}, "", std::nullopt, body)) == Verdict::kAccepted);

  // Within retention only: once the stored rows are gone, the body is new again.
  REQUIRE(t->Clear("ep", "d-1", kT0).ok());
  REQUIRE(t->Clear("ep", "d-7", kT0).ok());
  CHECK(Accept(t, with_body_dedupe(MakeEvent("d-8", {"h1"}, "", std::nullopt, body))) ==
        Verdict::kAccepted);
}

TEST_CASE("sequence gate: lower is stale with no jobs, equal is accepted") {
  TestInbox t;
  CHECK(Accept(t, MakeEvent("e5", {"h"}, "r", 5)) == Verdict::kAccepted);
  CHECK(Accept(t, MakeEvent("e3", {"h"}, "r", 3)) == Verdict::kStale);
  CHECK(Accept(t, MakeEvent("e5b", {"h"}, "r", 5)) == Verdict::kAccepted);
  CHECK(Accept(t, MakeEvent("o1", {"h"}, "other", 1)) == Verdict::kAccepted);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'stale'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 3);
  CHECK(t.Count("SELECT last_sequence FROM sequences WHERE resource_id = 'r'") == 5);
}

TEST_CASE("no handlers: stored as ignored, with no jobs") {
  TestInbox t;
  CHECK(Accept(t, MakeEvent("i", {})) == Verdict::kIgnored);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'ignored'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 0);
}

TEST_CASE("group commit: concurrent accepts of distinct and repeated ids") {
  TestInbox t;
  constexpr int kThreads = 16, kEach = 40;
  std::atomic<int> accepted{0}, duplicate{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kEach; ++n) {
        // Every id is sent by two threads.
        auto r = t->Accept(MakeEvent("id-" + std::to_string((i / 2) * kEach + n)));
        if (!r.ok()) continue;
        if (r->verdict == Verdict::kAccepted) ++accepted;
        if (r->verdict == Verdict::kDuplicate) ++duplicate;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(accepted == kThreads * kEach / 2);
  CHECK(duplicate == kThreads * kEach / 2);
  CHECK(t.Count("SELECT count(*) FROM inbox") == kThreads * kEach / 2);
  CHECK(t.Count("SELECT count(*) FROM jobs") == kThreads * kEach / 2);
}

TEST_CASE("clear forgets the row, its jobs and attempts") {
  TestInbox t;
  Accept(t, MakeEvent("c"));
  REQUIRE(Claim(t, kT0, 10, 60s).size() == 1);
  JobOutcome retry;
  retry.outcome = Outcome::kFailed;
  retry.next = JobOutcome::Next::kRetry;
  retry.next_attempt_at = kT0 + 1h;
  retry.finished_at = kT0 + 1s;
  Accept(t, MakeEvent("waits"));
  auto waits = Claim(t, kT0 + 1s);
  REQUIRE(waits.size() == 1);
  REQUIRE(t->FinishJob(waits[0], retry).ok());
  // A job waiting for its retry is not running: its row is cleared at once.
  CHECK(t->Clear("ep", "waits", kT0 + 2s).ok());
  // A claim whose worker died: its lease ran out, so nothing runs it any more.
  CHECK(t->Clear("ep", "c", kT0 + 61s).ok());
  CHECK(t.Count("SELECT count(*) FROM inbox") == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 0);
  CHECK(t.Count("SELECT count(*) FROM attempts") == 0);
  CHECK(t->Clear("ep", "c", kT0 + 61s).code() == Status::Code::kNotFound);
  CHECK(Accept(t, MakeEvent("c")) == Verdict::kAccepted);
}

TEST_CASE("clear refuses a row whose job holds a live lease, and changes nothing") {
  // Issue 29, defect 8: the clear discarded a running attempt, and the next event of its
  // resource then ran beside it.
  TestInbox t;
  Accept(t, MakeEvent("first", {"h"}, "order-1", 1));
  Accept(t, MakeEvent("second", {"h"}, "order-1", 2));
  auto running = Claim(t, kT0, 10, 60s);
  REQUIRE(running.size() == 1);
  REQUIRE(running[0].event.event_id == "first");
  Status refused = t->Clear("ep", "first", kT0 + 30s);
  CHECK(refused.code() == Status::Code::kConflict);
  CHECK(refused.what() == "event is being processed");
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'first'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 2);
  CHECK(t.Count("SELECT count(*) FROM attempts") == 1);
  // The order holds: the resource's next job waits for the running one, whose result stands.
  CHECK(Claim(t, kT0 + 30s).empty());
  REQUIRE(t->FinishJob(running[0], Done(kT0 + 31s)).ok());
  auto next = Claim(t, kT0 + 32s);
  REQUIRE(next.size() == 1);
  CHECK(next[0].event.event_id == "second");
  // Finished, the row can go.
  CHECK(t->Clear("ep", "first", kT0 + 33s).ok());

  // A sync request's jobs are leased from the accept on: refused too.
  Event e = MakeEvent("sync-1");
  e.sync_owner = "request-1";
  e.sync_lease = 30s;
  REQUIRE(t->Accept(e).ok());
  CHECK(t->Clear("ep", "sync-1", kT0 + 1s).code() == Status::Code::kConflict);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'sync-1'") == 1);
}

TEST_CASE("a claimed job is not claimed again while its lease lives") {
  TestInbox t;
  Accept(t, MakeEvent("a", {"h1", "h2"}));
  auto first = Claim(t, kT0, 10, 10s);
  // One event's jobs have no resource: both handlers may run at once.
  REQUIRE(first.size() == 2);
  CHECK(first[0].lease_token != first[1].lease_token);
  CHECK(first[0].event.attempt == 1);
  CHECK(first[0].event.body == "{}");
  CHECK(Claim(t, kT0 + 9s).empty());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processing'") == 1);
  for (const auto& job : first) REQUIRE(t->FinishJob(job, Done(kT0 + 1s)).ok());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 1);
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE outcome = 'ok'") == 2);
}

TEST_CASE("reverse-order finish: the worker that lost its lease changes nothing") {
  TestInbox t;
  Accept(t, MakeEvent("a"));
  auto a = Claim(t, kT0, 1, 5s);  // attempt A
  REQUIRE(a.size() == 1);
  auto b = Claim(t, kT0 + 6s, 1, 5s);  // A's lease ran out: attempt B takes over
  REQUIRE(b.size() == 1);
  CHECK(b[0].event.attempt == 2);
  CHECK(b[0].lease_token != a[0].lease_token);

  auto b_done = t->FinishJob(b[0], Done(kT0 + 7s));  // B finishes first
  REQUIRE(b_done.ok());
  JobOutcome a_failed;
  a_failed.outcome = Outcome::kFailed;
  a_failed.next = JobOutcome::Next::kDead;
  a_failed.finished_at = kT0 + 8s;
  auto a_done = t->FinishJob(a[0], a_failed);  // A finishes late
  CHECK(a_done.status().code() == Status::Code::kConflict);
  CHECK(a_done.status().what() == "lease lost");

  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'done'") == 1);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 1);
  CHECK(t.Count("SELECT count(*) FROM attempts") == 2);
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE outcome = 'ok' AND number = 2") == 1);
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE number = 1 AND outcome IS NULL"
                " AND detail LIKE 'abandoned%'") == 1);
}

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

TEST_CASE("per-resource order: one job of a resource at a time, in received order") {
  TestInbox t;
  Accept(t, MakeEvent("r1", {"h1", "h2"}, "R", 1));
  Accept(t, MakeEvent("r2", {"h1"}, "R", 2));
  Accept(t, MakeEvent("s1", {"h1"}, "S", 1));
  Accept(t, MakeEvent("free", {"h1"}));

  auto round1 = Claim(t, kT0);
  std::vector<std::string> got;
  for (auto& j : round1) got.push_back(j.event.event_id + "/" + j.handler);
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::string>{"free/h1", "r1/h1", "s1/h1"});
  CHECK(Claim(t, kT0).empty());

  auto finish = [&](const std::vector<ClaimedJob>& jobs, const std::string& id) {
    for (auto& j : jobs) {
      if (j.event.event_id == id) REQUIRE(t->FinishJob(j, Done(kT0)).ok());
    }
  };
  finish(round1, "r1");
  auto round2 = Claim(t, kT0);
  REQUIRE(round2.size() == 1);
  CHECK(round2[0].event.event_id == "r1");
  CHECK(round2[0].handler == "h2");
  finish(round2, "r1");
  auto round3 = Claim(t, kT0);
  REQUIRE(round3.size() == 1);
  CHECK(round3[0].event.event_id == "r2");
}

TEST_CASE("a job retrying holds back the later jobs of its resource") {
  TestInbox t;
  Accept(t, MakeEvent("r1", {"h"}, "R", 1));
  Accept(t, MakeEvent("r2", {"h"}, "R", 2));
  auto first = Claim(t, kT0);
  REQUIRE(first.size() == 1);
  JobOutcome retry;
  retry.outcome = Outcome::kFailed;
  retry.next = JobOutcome::Next::kRetry;
  retry.next_attempt_at = kT0 + 60s;
  retry.finished_at = kT0;
  REQUIRE(t->FinishJob(first[0], retry).ok());
  CHECK(Claim(t, kT0 + 10s).empty());  // r2 waits for r1
  auto later = Claim(t, kT0 + 60s);
  REQUIRE(later.size() == 1);
  CHECK(later[0].event.event_id == "r1");
}

TEST_CASE("sql handler statements commit with the job, or not at all") {
  TestInbox t;
  SqlWork sql;
  sql.setup = {"CREATE TABLE IF NOT EXISTS effects (event_id TEXT PRIMARY KEY, kind TEXT)"};
  sql.statements = {"INSERT INTO effects (event_id, kind) VALUES (:event_id, :type)"};
  REQUIRE(t->PrepareSql(sql).ok());
  REQUIRE(t->PrepareSql(sql).ok());  // setup is idempotent

  Accept(t, MakeEvent("s1"));
  auto job = Claim(t, kT0);
  REQUIRE(job.size() == 1);
  JobOutcome if_failed;
  if_failed.outcome = Outcome::kFailed;
  if_failed.next = JobOutcome::Next::kRetry;
  if_failed.next_attempt_at = kT0 + 1s;
  auto recorded = t->FinishJob(job[0], Done(kT0), &sql, &if_failed);
  REQUIRE(recorded.ok());
  CHECK(*recorded == Outcome::kOk);
  CHECK(t.Count("SELECT count(*) FROM effects WHERE event_id = 's1' AND kind = 'thing.happened'") ==
        1);

  // A statement that fails (the primary key is taken) leaves nothing and records a failure.
  SqlWork clash;
  clash.statements = {"INSERT INTO effects (event_id, kind) VALUES ('x', 'first')",
                      "INSERT INTO effects (event_id, kind) VALUES ('s1', 'again')"};
  Accept(t, MakeEvent("s2"));
  auto job2 = Claim(t, kT0);
  REQUIRE(job2.size() == 1);
  auto failed = t->FinishJob(job2[0], Done(kT0), &clash, &if_failed);
  REQUIRE(failed.ok());
  CHECK(*failed == Outcome::kFailed);
  CHECK(t.Count("SELECT count(*) FROM effects") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'pending'") == 1);
  // SQLite: "UNIQUE constraint failed", PostgreSQL: "violates unique constraint".
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE outcome = 'failed'"
                " AND lower(detail) LIKE 'sql:%unique%'") == 1);

  SqlWork broken;
  broken.statements = {"INSERT INTO no_such_table VALUES (:event_id)"};
  CHECK_FALSE(t->PrepareSql(broken).ok());
}

TEST_CASE("FinishJobs: one batch, each finish its own compare-and-swap and sql savepoint") {
  TestInbox t;
  SqlWork sql;
  sql.setup = {"CREATE TABLE IF NOT EXISTS batch_effects (event_id TEXT PRIMARY KEY)"};
  sql.statements = {"INSERT INTO batch_effects (event_id) VALUES (:event_id)"};
  REQUIRE(t->PrepareSql(sql).ok());
  SqlWork clash;  // fails: b1's row is already there when it runs
  clash.statements = {"INSERT INTO batch_effects (event_id) VALUES ('b1')"};
  for (const char* id : {"b1", "b2", "b3", "b4"}) Accept(t, MakeEvent(id));
  auto jobs = Claim(t, kT0);
  REQUIRE(jobs.size() == 4);
  // b3's lease is lost: it ran out and another worker took the job over.
  ClaimedJob stale = jobs[2];
  stale.lease_token = "not-the-token";

  JobOutcome if_failed;
  if_failed.outcome = Outcome::kFailed;
  if_failed.next = JobOutcome::Next::kRetry;
  if_failed.next_attempt_at = kT0 + 1s;
  std::vector<FinishRequest> batch(4);
  batch[0] = {&jobs[0], Done(kT0), &sql, if_failed};    // ok, its statement commits
  batch[1] = {&jobs[1], Done(kT0), &clash, if_failed};  // its statement fails
  batch[2] = {&stale, Done(kT0), &sql, if_failed};      // lease lost
  batch[3] = {&jobs[3], Done(kT0), nullptr, {}};        // plain ok
  auto results = t->FinishJobs(batch);
  REQUIRE(results.size() == 4);
  REQUIRE(results[0].ok());
  CHECK(*results[0] == Outcome::kOk);
  REQUIRE(results[1].ok());
  CHECK(*results[1] == Outcome::kFailed);
  CHECK(results[2].status().code() == Status::Code::kConflict);
  REQUIRE(results[3].ok());
  CHECK(*results[3] == Outcome::kOk);

  // Only b1's statement stayed; the lost lease changed nothing of b3's job.
  CHECK(t.Count("SELECT count(*) FROM batch_effects") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'done'") == 2);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'pending'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'processing'") == 1);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 2);
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE finished_at IS NULL") == 1);
}

TEST_CASE("FinishJobs without sql: every outcome in one batch, a lost lease changes nothing") {
  TestInbox t;
  Accept(t, MakeEvent("two", {"h1", "h2"}));   // both jobs finish: processed
  Accept(t, MakeEvent("half", {"h1", "h2"}));  // one of two: still processing
  for (const char* id : {"retry", "dead", "lost"}) Accept(t, MakeEvent(id));
  auto jobs = Claim(t, kT0);
  REQUIRE(jobs.size() == 7);
  std::map<std::string, std::vector<ClaimedJob*>> by_event;
  for (ClaimedJob& j : jobs) by_event[j.event.event_id].push_back(&j);
  ClaimedJob stale = *by_event["lost"][0];
  stale.lease_token = "not-the-token";

  JobOutcome retry;
  retry.outcome = Outcome::kFailed;
  retry.detail = "exit 3";
  retry.next = JobOutcome::Next::kRetry;
  retry.next_attempt_at = kT0 + 30s;
  retry.finished_at = kT0 + 2s;
  retry.refund_try = true;
  JobOutcome dead = retry;
  dead.outcome = Outcome::kPermanent;
  dead.next = JobOutcome::Next::kDead;
  dead.refund_try = false;
  std::vector<FinishRequest> batch = {{by_event["two"][0], Done(kT0 + 1s), nullptr, {}},
                                      {by_event["two"][1], Done(kT0 + 3s), nullptr, {}},
                                      {by_event["half"][0], Done(kT0 + 1s), nullptr, {}},
                                      {by_event["retry"][0], retry, nullptr, {}},
                                      {by_event["dead"][0], dead, nullptr, {}},
                                      {&stale, Done(kT0), nullptr, {}}};
  auto results = t->FinishJobs(batch);
  REQUIRE(results.size() == batch.size());
  for (size_t i = 0; i < 5; ++i) {
    REQUIRE(results[i].ok());
    CHECK(*results[i] == batch[i].outcome.outcome);
  }
  CHECK(results[5].status().code() == Status::Code::kConflict);

  auto status_of = [&](const std::string& id) {
    auto shown = t->Show("ep", id);
    REQUIRE(shown.ok());
    return shown->row.status;
  };
  CHECK(status_of("two") == "processed");
  CHECK(status_of("half") == "processing");
  CHECK(status_of("retry") == "processing");
  CHECK(status_of("dead") == "dead");
  CHECK(status_of("lost") == "processing");
  // processed_at is the time of the row's last finish.
  auto two = t->Show("ep", "two");
  REQUIRE(two.ok());
  CHECK(two->row.processed_at == FormatTime(kT0 + 3s));
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE processed_at IS NOT NULL") == 1);
  // The retry: pending, its try given back, its error kept, due at its time.
  CHECK(t.Count("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                " WHERE i.event_id = 'retry' AND j.status = 'pending' AND j.attempts = 0"
                " AND j.last_error = 'exit 3' AND j.lease_token IS NULL") == 1);
  CHECK(Claim(t, kT0 + 29s).empty());  // the retry is not due yet; the rest are leased
  auto due = Claim(t, kT0 + 31s);
  REQUIRE(due.size() == 1);
  CHECK(due[0].event.event_id == "retry");
  // The lost lease: the job is still the other owner's, its attempt still open.
  CHECK(t.Count("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                " WHERE i.event_id = 'lost' AND j.status = 'processing'") == 1);
  // Open: half's second job, the lost one, and the retry's new attempt claimed above.
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE finished_at IS NULL") == 3);
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE outcome = 'permanent'") == 1);
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE outcome = 'ok'") == 3);
}

TEST_CASE("finishes whose handler output is not UTF-8 are stored with U+FFFD, on both") {
  TestInbox t;
  for (const char* id : {"good", "bad", "alone"}) Accept(t, MakeEvent(id));
  auto jobs = Claim(t, kT0);
  REQUIRE(jobs.size() == 3);
  std::sort(jobs.begin(), jobs.end(), [](const ClaimedJob& a, const ClaimedJob& b) {
    return a.event.event_id < b.event.event_id;  // alone, bad, good
  });
  JobOutcome binary;
  binary.outcome = Outcome::kFailed;
  static const char kOutput[] = "stderr: \xff\xfe\0 \xc3\xa9 \xed\xa0\x80";
  binary.detail = std::string(kOutput, sizeof kOutput - 1);
  binary.next = JobOutcome::Next::kRetry;
  binary.next_attempt_at = kT0 + 1s;
  // A batch (PostgreSQL: one statement for all) and a finish of its own (FinishJob).
  auto results =
      t->FinishJobs({{&jobs[2], Done(kT0), nullptr, {}}, {&jobs[1], binary, nullptr, {}}});
  REQUIRE(results.size() == 2);
  REQUIRE(results[0].ok());
  REQUIRE(results[1].ok());
  CHECK(*results[1] == Outcome::kFailed);
  auto alone = t->FinishJob(jobs[0], binary, nullptr, nullptr);
  REQUIRE(alone.ok());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'good' AND status = 'processed'") ==
        1);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'pending'") == 2);
  for (const char* id : {"bad", "alone"}) {
    auto shown = t->Show("ep", id);
    REQUIRE(shown.ok());
    REQUIRE(shown->jobs.size() == 1);
    REQUIRE(shown->jobs[0].attempt_rows.size() == 1);
    // Both backends store the same (issue 29, defect 11): each bad byte, the NUL and each
    // byte of the encoded surrogate become U+FFFD; é stays.
    const std::string sanitised = "stderr: \uFFFD\uFFFD\uFFFD \u00e9 \uFFFD\uFFFD\uFFFD";
    CHECK(shown->jobs[0].attempt_rows[0].detail == sanitised);
    CHECK(shown->jobs[0].last_error == sanitised);
  }
}

TEST_CASE("List, Show and Stats read what was stored") {
  TestInbox t;
  Accept(t, MakeEvent("a"));
  Accept(t, MakeEvent("b", {}));
  auto rows = t->List({});
  REQUIRE(rows.ok());
  CHECK(rows->size() == 2);
  auto pending = t->List({.filter = {.endpoint = "ep", .status = "pending"}, .limit = 10});
  REQUIRE(pending.ok());
  REQUIRE(pending->size() == 1);
  CHECK((*pending)[0].event_id == "a");
  auto detail = t->Show("ep", "a");
  REQUIRE(detail.ok());
  CHECK(detail->row.body == "{}");
  REQUIRE(detail->jobs.size() == 1);
  CHECK(detail->jobs[0].handler == "h");
  CHECK(t->Show("ep", "zz").status().code() == Status::Code::kNotFound);
  auto stats = t->Stats();
  REQUIRE(stats.ok());
  CHECK((*stats)["ep"]["pending"] == 1);
  CHECK((*stats)["ep"]["ignored"] == 1);
}

TEST_CASE("opening a database that cannot be opened is Unavailable") {
  if (OnPostgres()) {
    // No server at that socket; no such database (hookbox never creates one); a database
    // without the hookbox schema, opened by a verb that must not create it.
    auto r = OpenInbox({"postgresql:///x?host=/nonexistent-dir&connect_timeout=2", true, true});
    CHECK(r.status().code() == Status::Code::kUnavailable);
    auto missing = OpenInbox({pgtest::UrlFor("hookbox_no_such_db"), true, true});
    CHECK(missing.status().code() == Status::Code::kUnavailable);
    pgtest::TestDatabase empty;
    auto no_create = OpenInbox({empty.url(), true, false});
    CHECK(no_create.status().code() == Status::Code::kUnavailable);
    CHECK(empty.Count("SELECT count(*) FROM pg_tables WHERE tablename = 'inbox'") == 0);
    auto created = OpenInbox({empty.url(), true, true});
    REQUIRE(created.ok());
    CHECK(empty.Count("SELECT count(*) FROM schema_migrations") >= 1);
    created->reset();
    CHECK(OpenInbox({empty.url(), true, false}).ok());  // now there is a schema
    return;
  }
  auto r = OpenInbox({"/nonexistent-dir/inbox.db", true, true});
  CHECK(r.status().code() == Status::Code::kUnavailable);
  auto no_create = OpenInbox({"/tmp/hookbox-does-not-exist.db", true, false});
  CHECK(no_create.status().code() == Status::Code::kUnavailable);
}

TEST_CASE("opening without create only reads: no write lock, nothing migrated") {
  TestInbox t;
  REQUIRE(Accept(t, MakeEvent("r1")) == Verdict::kAccepted);
  if (!OnPostgres()) {
    // Another process's write transaction holds the write lock for as long as it runs: the
    // operator's verbs open and read meanwhile (issue 29: they waited 5 s, then failed).
    sqlite3* other = nullptr;
    REQUIRE(sqlite3_open(t.database.c_str(), &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE; UPDATE inbox SET duplicates = 7", nullptr,
                         nullptr, nullptr) == SQLITE_OK);
    const auto start = std::chrono::steady_clock::now();
    auto reader = OpenInbox({t.database, true, /*create=*/false});
    REQUIRE(reader.ok());
    auto rows = (*reader)->List({});
    REQUIRE(rows.ok());
    CHECK(rows->size() == 1);
    CHECK(std::chrono::steady_clock::now() - start < 2s);  // the busy timeout is 5 s
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(other);
  }
  // A database behind this binary: refused, and left as it was.
  const int64_t recorded = t.Count("SELECT count(*) FROM schema_migrations");
  t.inbox.reset();
  const std::string drop_last =
      "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM "
      "schema_migrations)";
  if (OnPostgres()) {
    REQUIRE(t.pg->Query(drop_last).empty());
  } else {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(t.database.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, drop_last.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto behind = OpenInbox({t.database, true, /*create=*/false});
  CHECK(behind.status().code() == Status::Code::kUnavailable);
  CHECK(behind.status().ToString().find("hookbox migrate") != std::string::npos);
  CHECK(t.Count("SELECT count(*) FROM schema_migrations") == recorded - 1);
}

TEST_CASE("migrations are applied once when several replicas start at once") {
  TestInbox t;
  const int64_t recorded = t.Count("SELECT count(*) FROM schema_migrations");
  CHECK(recorded >= 1);
  // A fresh database, opened by four at once.
  std::unique_ptr<pgtest::TestDatabase> fresh_pg;
  std::string fresh = t.dir + "/fresh.db";
  if (OnPostgres()) {
    fresh_pg = std::make_unique<pgtest::TestDatabase>();
    fresh = fresh_pg->url();
  }
  std::vector<std::thread> openers;
  std::atomic<int> opened{0};
  std::atomic<size_t> applied_total{0};
  std::mutex errors_mu;
  std::vector<std::string> errors;
  for (int i = 0; i < 4; ++i) {
    openers.emplace_back([&] {
      std::vector<std::string> applied;
      auto inbox = OpenInbox({fresh, true, true}, &applied);
      if (inbox.ok()) {
        ++opened;
      } else {
        std::lock_guard lock(errors_mu);
        errors.push_back(inbox.status().ToString());
      }
      applied_total += applied.size();
    });
  }
  for (auto& th : openers) th.join();
  for (const std::string& e : errors) INFO(e);
  INFO((errors.empty() ? "" : errors.front()));
  CHECK(opened == 4);
  CHECK(applied_total == static_cast<size_t>(recorded));  // each migration by one opener
}

TEST_CASE("sync: accept claims the jobs for the request; the pool never takes them") {
  TestInbox t;
  Event e = MakeEvent("s", {"h1", "h2"});
  e.sync_owner = "request-1";
  e.sync_lease = 30s;
  auto r = t->Accept(e);
  REQUIRE(r.ok());
  CHECK(r->verdict == Verdict::kAccepted);
  REQUIRE(r->claimed.size() == 2);
  CHECK(Claim(t, kT0 + 1h).empty());  // not even after the lease ran out

  // A concurrent duplicate finds the jobs busy.
  auto busy = t->ClaimEvent("ep", "s", "request-2", kT0 + 1s, 30s);
  REQUIRE(busy.ok());
  CHECK(busy->state == EventClaim::State::kBusy);

  // The first request fails one handler: it releases it for the producer's retry.
  REQUIRE(t->FinishJob(r->claimed[0], Done(kT0 + 1s)).ok());
  JobOutcome release;
  release.outcome = Outcome::kFailed;
  release.next = JobOutcome::Next::kRetry;
  release.next_attempt_at = kT0 + 1s;
  release.finished_at = kT0 + 1s;
  REQUIRE(t->FinishJob(r->claimed[1], release).ok());

  auto takeover = t->ClaimEvent("ep", "s", "request-2", kT0 + 2s, 30s);
  REQUIRE(takeover.ok());
  REQUIRE(takeover->state == EventClaim::State::kClaimed);
  REQUIRE(takeover->jobs.size() == 1);
  CHECK(takeover->jobs[0].handler == "h2");
  CHECK(takeover->jobs[0].event.attempt == 2);
  REQUIRE(t->FinishJob(takeover->jobs[0], Done(kT0 + 3s)).ok());

  auto settled = t->ClaimEvent("ep", "s", "request-3", kT0 + 4s, 30s);
  REQUIRE(settled.ok());
  CHECK(settled->state == EventClaim::State::kSettled);
  CHECK(settled->row_status == "processed");
  CHECK(t->ClaimEvent("ep", "nope", "r", kT0, 1s).status().code() == Status::Code::kNotFound);
}

TEST_CASE("sync: RenewLeases extends the leases still held; a lost one renews none") {
  // Issue 29, defect 2: a request runs its jobs one after another, and the lease its accept
  // took ran out under the last of them; a duplicate took that job over while it ran.
  TestInbox t;
  Event e = MakeEvent("s", {"h1", "h2", "h3"});
  e.sync_owner = "request-1";
  e.sync_lease = 30s;
  auto r = t->Accept(e);
  REQUIRE(r.ok());
  REQUIRE(r->claimed.size() == 3);
  REQUIRE(t->FinishJob(r->claimed[0], Done(kT0 + 20s)).ok());
  // h2 starts at +20 s: the request renews what it still holds, h2 and h3, to +50 s.
  const std::span<const ClaimedJob> rest = std::span(r->claimed).subspan(1);
  REQUIRE(t->RenewLeases(rest, kT0 + 20s, 30s).ok());
  CHECK(t->RenewLeases({}, kT0 + 20s, 30s).ok());
  // Past the accept's lease, a duplicate finds the event busy, not free to take over.
  auto busy = t->ClaimEvent("ep", "s", "request-2", kT0 + 40s, 30s);
  REQUIRE(busy.ok());
  CHECK(busy->state == EventClaim::State::kBusy);
  REQUIRE(t->FinishJob(r->claimed[1], Done(kT0 + 41s)).ok());

  // The request stalls past its renewed lease: another takes h3 over (new token, until
  // +90 s). The first request's renewal is then lost and changes nothing, even together with
  // a job whose token does hold: the new owner's lease still ends at +90 s.
  auto takeover = t->ClaimEvent("ep", "s", "request-2", kT0 + 60s, 30s);
  REQUIRE(takeover.ok());
  REQUIRE(takeover->state == EventClaim::State::kClaimed);
  REQUIRE(takeover->jobs.size() == 1);
  Status lost = t->RenewLeases(std::span(r->claimed).subspan(2), kT0 + 61s, 100s);
  CHECK(lost.code() == Status::Code::kConflict);
  CHECK(lost.what() == "lease lost");
  const std::vector<ClaimedJob> mixed = {takeover->jobs[0], r->claimed[2]};
  CHECK(t->RenewLeases(mixed, kT0 + 61s, 100s).code() == Status::Code::kConflict);
  auto after = t->ClaimEvent("ep", "s", "request-3", kT0 + 91s, 30s);
  REQUIRE(after.ok());
  CHECK(after->state == EventClaim::State::kClaimed);
  // Its own renewal is what keeps a live owner's event busy.
  REQUIRE(after->jobs.size() == 1);
  REQUIRE(t->RenewLeases(after->jobs, kT0 + 100s, 30s).ok());
  auto held = t->ClaimEvent("ep", "s", "request-4", kT0 + 125s, 30s);
  REQUIRE(held.ok());
  CHECK(held->state == EventClaim::State::kBusy);
  CHECK(t->FinishJob(r->claimed[2], Done(kT0 + 126s)).status().code() == Status::Code::kConflict);
  REQUIRE(t->FinishJob(after->jobs[0], Done(kT0 + 126s)).ok());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 1);
}

TEST_CASE("sync sql: the side effect and the inbox row commit together or not at all") {
  TestInbox t;
  SqlWork sql;
  sql.setup = {"CREATE TABLE IF NOT EXISTS credits (event_id TEXT PRIMARY KEY, body TEXT)"};
  sql.statements = {"INSERT INTO credits VALUES (:event_id, :body)"};
  REQUIRE(t->PrepareSql(sql).ok());
  Event e = MakeEvent("pay-1", {"ledger"});
  e.sync_owner = "request";
  e.sync_lease = 30s;
  e.sync_sql = {{"ledger", &sql}};
  auto r = t->Accept(e);
  REQUIRE(r.ok());
  CHECK(r->verdict == Verdict::kAccepted);
  CHECK(r->claimed.empty());
  CHECK(t.Count("SELECT count(*) FROM credits") == 1);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 1);
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE outcome = 'ok'") == 1);
  CHECK(t->Accept(e)->verdict == Verdict::kDuplicate);
  CHECK(t.Count("SELECT count(*) FROM credits") == 1);

  // The statement fails (primary key taken by a row written outside hookbox): no inbox row.
  SqlWork clash;
  clash.statements = {"INSERT INTO credits VALUES ('pay-1', 'again')"};
  Event f = MakeEvent("pay-2", {"ledger"});
  f.sync_owner = "request";
  f.sync_lease = 30s;
  f.sync_sql = {{"ledger", &clash}};
  auto failed = t->Accept(f);
  CHECK(failed.status().code() == Status::Code::kInternal);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'pay-2'") == 0);
  CHECK(t.Count("SELECT count(*) FROM credits") == 1);
}

TEST_CASE("purge removes exactly the rows past retention, in batches; dry run counts") {
  TestInbox t;
  auto at = [](TimePoint when, Event e) {
    e.received_at = when;
    return e;
  };
  // Old: processed, stale, ignored, dead; new: one of each; and pending rows, old and new.
  const TimePoint old_time = kT0 - std::chrono::hours(24 * 40);
  for (int i = 0; i < 7; ++i)
    Accept(t, at(old_time, MakeEvent("old-ign-" + std::to_string(i), {})));
  Accept(t, at(kT0, MakeEvent("new-ign", {})));
  Accept(t, at(old_time, MakeEvent("old-pending")));
  Accept(t, at(old_time, MakeEvent("s5", {"h"}, "r", 5)));
  Accept(t, at(old_time, MakeEvent("s3", {"h"}, "r", 3)));  // stale
  // s5's job: done -> processed (old).
  for (auto& j : Claim(t, kT0)) {
    if (j.event.event_id == "s5") REQUIRE(t->FinishJob(j, Done(kT0)).ok());
  }
  PurgeRequest r;
  r.processed_before = kT0 - std::chrono::hours(24 * 7);
  r.dead_before = kT0 - std::chrono::hours(24 * 30);
  r.sequences_before = kT0 - std::chrono::hours(24 * 90);
  r.batch = 3;
  r.dry_run = true;
  auto dry = t->Purge(r);
  REQUIRE(dry.ok());
  CHECK(dry->ignored == 7);
  CHECK(dry->processed == 1);
  CHECK(dry->stale == 1);
  CHECK(dry->dead == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox") == 11);  // nothing deleted

  r.dry_run = false;
  auto done = t->Purge(r);
  REQUIRE(done.ok());
  CHECK(done->ignored == dry->ignored);
  CHECK(done->processed == dry->processed);
  CHECK(done->stale == dry->stale);
  CHECK(t.Count("SELECT count(*) FROM inbox") == 2);  // new-ign and old-pending stay
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'old-pending'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 1);       // old-pending's; s5's went with it
  CHECK(t.Count("SELECT count(*) FROM sequences") == 1);  // updated recently enough

  r.sequences_before = kT0 + std::chrono::hours(1);
  auto seq = t->Purge(r);
  REQUIRE(seq.ok());
  CHECK(seq->sequences == 1);
  CHECK(t.Count("SELECT count(*) FROM sequences") == 0);
}

TEST_CASE("purge keeps a dead row while another of its jobs waits or runs; dry run agrees") {
  // Issue 29, defect 7: a row is dead as soon as one job is, and the purge deleted it with
  // its other jobs still pending or running.
  TestInbox t;
  const TimePoint old_time = kT0 - std::chrono::hours(24 * 40);
  Event mixed = MakeEvent("mixed", {"fails", "retries", "runs"});
  mixed.received_at = old_time;
  Event all_dead = MakeEvent("all-dead", {"fails"});
  all_dead.received_at = old_time;
  Accept(t, mixed);
  Accept(t, all_dead);
  auto jobs = Claim(t, kT0, 10, 60s);
  REQUIRE(jobs.size() == 4);
  JobOutcome dead;
  dead.outcome = Outcome::kPermanent;
  dead.next = JobOutcome::Next::kDead;
  dead.finished_at = kT0;
  JobOutcome retry;
  retry.outcome = Outcome::kFailed;
  retry.next = JobOutcome::Next::kRetry;
  retry.next_attempt_at = kT0 + 1h;
  retry.finished_at = kT0;
  const ClaimedJob* runs = nullptr;
  for (const ClaimedJob& j : jobs) {
    if (j.handler == "fails") REQUIRE(t->FinishJob(j, dead).ok());
    if (j.handler == "retries") REQUIRE(t->FinishJob(j, retry).ok());
    if (j.handler == "runs") runs = &j;
  }
  REQUIRE(runs != nullptr);
  REQUIRE(t.Count("SELECT count(*) FROM inbox WHERE status = 'dead'") == 2);

  PurgeRequest r;
  r.processed_before = kT0 - std::chrono::hours(24 * 7);
  r.dead_before = kT0 - std::chrono::hours(24 * 30);
  r.sequences_before = kT0 - std::chrono::hours(24 * 90);
  r.dry_run = true;
  auto dry = t->Purge(r);
  REQUIRE(dry.ok());
  CHECK(dry->dead == 1);
  r.dry_run = false;
  auto purged = t->Purge(r);
  REQUIRE(purged.ok());
  CHECK(purged->dead == dry->dead);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'all-dead'") == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'mixed'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 3);
  // The running attempt's result is recorded; the retry ends dead: now the row may go.
  REQUIRE(t->FinishJob(*runs, Done(kT0 + 1s)).ok());
  CHECK(t->Purge(r)->dead == 0);  // one job still waits for its retry
  auto retried = Claim(t, kT0 + 2h);
  REQUIRE(retried.size() == 1);
  dead.finished_at = kT0 + 2h;
  REQUIRE(t->FinishJob(retried[0], dead).ok());
  r.dry_run = true;
  CHECK(t->Purge(r)->dead == 1);
  r.dry_run = false;
  CHECK(t->Purge(r)->dead == 1);
  CHECK(t.Count("SELECT count(*) FROM inbox") == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 0);
}

// --- several replicas on one database ------------------------------------------------------
// Two Inbox objects on one database behave as two hookbox processes (SQLite: two connections
// to one file; PostgreSQL: two pools, as two replicas have).

TEST_CASE("replicas: concurrent accepts of the same new id give exactly one accepted") {
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kIds = 60, kThreads = 8;
  std::atomic<int> accepted{0}, duplicate{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      // Every thread sends every id, in its own order: each id races 8 ways over 2 replicas.
      std::vector<int> ids(kIds);
      for (int n = 0; n < kIds; ++n) ids[n] = n;
      std::shuffle(ids.begin(), ids.end(), std::mt19937(i));
      for (int n : ids) {
        auto r = inboxes[i % 2]->Accept(MakeEvent("race-" + std::to_string(n), {"h1", "h2"}));
        if (!r.ok())
          ++failed;
        else if (r->verdict == Verdict::kAccepted)
          ++accepted;
        else if (r->verdict == Verdict::kDuplicate)
          ++duplicate;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(accepted == kIds);
  CHECK(duplicate == kIds * (kThreads - 1));
  CHECK(t.Count("SELECT count(*) FROM inbox") == kIds);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 2 * kIds);
  CHECK(t.Count("SELECT sum(duplicates) FROM inbox") == kIds * (kThreads - 1));
}

TEST_CASE("replicas: concurrent identical bodies under distinct ids give one accepted") {
  // dedupe: [id, body], race-free: every thread sends every body under its own id, at
  // once, over two replicas (two processes' worth of connections on PostgreSQL).
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kBodies = 30, kThreads = 8;
  std::atomic<int> accepted{0}, duplicate{0}, failed{0}, wrong_original{0};
  std::mutex mu;
  std::map<int, std::string> accepted_id;  // body -> the id that was accepted
  std::vector<std::pair<int, std::string>> duplicates_of;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      std::vector<int> bodies(kBodies);
      for (int n = 0; n < kBodies; ++n) bodies[n] = n;
      std::shuffle(bodies.begin(), bodies.end(), std::mt19937(i));
      for (int n : bodies) {
        const std::string id = "b" + std::to_string(n) + "-t" + std::to_string(i);
        // Half the bodies have a resource (the transaction with the resource's lock).
        Event e = MakeEvent(id, {"h1", "h2"}, n % 2 ? "res-" + std::to_string(n) : "",
                            n % 2 ? std::optional<int64_t>(i) : std::nullopt,
                            "{\"body\":" + std::to_string(n) + "}");
        e.dedupe_body = true;
        auto r = inboxes[i % 2]->Accept(e);
        std::lock_guard lock(mu);
        if (!r.ok()) {
          ++failed;
        } else if (r->verdict == Verdict::kDuplicate) {
          ++duplicate;
          duplicates_of.emplace_back(n, r->duplicate_of);
        } else {
          // Accepted, or stale when a lower sequence of its resource came after a higher:
          // either way the one row stored for this body.
          ++accepted;
          accepted_id[n] = id;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(accepted == kBodies);
  CHECK(duplicate == kBodies * (kThreads - 1));
  for (const auto& [n, original] : duplicates_of) {
    if (accepted_id[n] != original) ++wrong_original;
  }
  CHECK(wrong_original == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox") == kBodies);
  CHECK(t.Count("SELECT sum(duplicates) FROM inbox") == kBodies * (kThreads - 1));
  CHECK(t.Count("SELECT count(*) FROM jobs") == 2 * kBodies);
}

TEST_CASE("replicas: concurrent accepts of one resource serialize on its sequence") {
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kEvents = 120, kThreads = 6;
  std::vector<int> seqs(kEvents);
  for (int i = 0; i < kEvents; ++i) seqs[i] = i + 1;
  std::shuffle(seqs.begin(), seqs.end(), std::mt19937(7));
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n; (n = next++) < kEvents;) {
        auto r =
            inboxes[i % 2]->Accept(MakeEvent("s" + std::to_string(seqs[n]), {"h"}, "R", seqs[n]));
        if (!r.ok()) ++failed;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox") == kEvents);
  CHECK(t.Count("SELECT last_sequence FROM sequences WHERE resource_id = 'R'") == kEvents);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE sequence_key = " + std::to_string(kEvents) +
                " AND status = 'pending'") == 1);  // the newest is never stale
  // Accepted rows, in received (id) order, have ascending sequences: the order their jobs
  // run in is the sequence order. Stale rows have no jobs.
  CHECK(t.Count("SELECT count(*) FROM inbox a JOIN inbox b ON b.resource_id = a.resource_id"
                " AND b.id > a.id WHERE a.status <> 'stale' AND b.status <> 'stale'"
                " AND a.sequence_key > b.sequence_key") == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                " WHERE i.status = 'stale'") == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs") == t.Count("SELECT count(*) FROM inbox"
                                                        " WHERE status <> 'stale'"));
}

TEST_CASE("replicas: claiming at once, each job runs once, one per resource, in order") {
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kResources = 4, kPerResource = 8, kFree = 16;
  for (int n = 1; n <= kPerResource; ++n) {
    for (int r = 0; r < kResources; ++r) {
      std::string res = "R" + std::to_string(r);
      Accept(t, MakeEvent(res + "-" + std::to_string(n), {"h"}, res, n));
    }
  }
  for (int n = 0; n < kFree; ++n) Accept(t, MakeEvent("free-" + std::to_string(n)));
  constexpr int kJobs = kResources * kPerResource + kFree;

  std::mutex mu;
  std::set<std::string> held;                     // resources with a job running now
  std::map<std::string, std::vector<int>> order;  // resource -> sequences, as run
  std::map<int64_t, int> claims;                  // job -> times claimed
  int overlaps = 0;
  std::atomic<int> finished{0}, errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      Inbox& inbox = *inboxes[i % 2];
      const std::string owner = "replica" + std::to_string(i % 2) + ":w" + std::to_string(i);
      auto deadline = std::chrono::steady_clock::now() + 30s;
      while (finished < kJobs && std::chrono::steady_clock::now() < deadline) {
        auto c = inbox.ClaimJobs(owner, 1, kT0, 60s);
        if (!c.ok()) {
          ++errors;
          continue;
        }
        if (c->empty()) {
          std::this_thread::sleep_for(1ms);
          continue;
        }
        const ClaimedJob& job = c->front();
        const std::string& res = job.event.resource_id;
        {
          std::lock_guard lock(mu);
          ++claims[job.job_id];
          if (!res.empty()) {
            if (!held.insert(res).second) ++overlaps;
            order[res].push_back(std::stoi(job.event.sequence));
          }
        }
        std::this_thread::sleep_for(2ms);  // the handler runs
        {
          std::lock_guard lock(mu);
          if (!res.empty()) held.erase(res);
        }
        if (inbox.FinishJob(job, Done(kT0)).ok())
          ++finished;
        else
          ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(finished == kJobs);
  CHECK(overlaps == 0);
  CHECK(claims.size() == static_cast<size_t>(kJobs));
  for (const auto& [job, n] : claims) CHECK(n == 1);
  for (const auto& [res, seqs] : order) {
    INFO(res);
    CHECK(std::is_sorted(seqs.begin(), seqs.end()));
    CHECK(seqs.size() == static_cast<size_t>(kPerResource));
  }
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == kJobs);
}

TEST_CASE("identity fields that are not UTF-8: PostgreSQL refuses them as InvalidArgument") {
  TestInbox t;
  Event e = MakeEvent("bad-\xff\xfe-id");
  auto r = t->Accept(e);
  if (OnPostgres()) {
    CHECK(r.status().code() == Status::Code::kInvalidArgument);  // answered 400
    CHECK(t.Count("SELECT count(*) FROM inbox") == 0);
  } else {
    REQUIRE(r.ok());
    CHECK(r->verdict == Verdict::kAccepted);
  }
  Event binary = MakeEvent("binary-body");
  binary.body = std::string("\xff\x00\x01 any bytes", 13);
  REQUIRE(t->Accept(binary).ok());
  auto shown = t->Show("ep", "binary-body");
  REQUIRE(shown.ok());
  CHECK(shown->row.body == binary.body);
  auto claimed = Claim(t, kT0);
  REQUIRE(!claimed.empty());
  CHECK(claimed.back().event.body == binary.body);
}

TEST_CASE("group commit: one event the server refuses fails alone, its group is stored") {
  TestInbox t;
  // Groups form while a leader's statement runs: 16 threads keep the queue busy, and every
  // 25th event of thread 0 has an id PostgreSQL cannot store.
  constexpr int kThreads = 16, kEach = 50;
  std::atomic<int> accepted{0}, refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kEach; ++n) {
        const bool bad = i == 0 && n % 25 == 0;
        auto r = t->Accept(
            MakeEvent((bad ? "bad-\xff-" : "good-") + std::to_string(i) + "-" + std::to_string(n),
                      {"h1", "h2"}));
        if (r.ok() && r->verdict == Verdict::kAccepted)
          ++accepted;
        else if (!r.ok() && r.status().code() == Status::Code::kInvalidArgument)
          ++refused;
        else
          ++other;
      }
    });
  }
  for (auto& th : threads) th.join();
  const int bad = 2, good = kThreads * kEach - bad;
  CHECK(other == 0);
  if (OnPostgres()) {
    CHECK(refused == bad);
    CHECK(accepted == good);
  } else {
    CHECK(accepted == good + bad);  // SQLite stores any bytes
  }
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id LIKE 'good-%'") == good);
  // Each stored row has its two jobs, in handler order.
  CHECK(t.Count("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                " WHERE i.event_id LIKE 'good-%'") == 2 * good);
  CHECK(t.Count("SELECT count(*) FROM jobs a JOIN jobs b ON a.inbox_id = b.inbox_id"
                " AND a.handler = 'h1' AND b.handler = 'h2' AND a.id < b.id") ==
        (OnPostgres() ? good : good + bad));
}

TEST_CASE("queue stats, lease owners, and ending the leases of an owner that is gone") {
  TestInbox t;
  for (const char* id : {"q1", "q2", "q3"}) Accept(t, MakeEvent(id));
  auto held = t->ClaimJobs("hostA:123:w0", 2, kT0, 60s);
  REQUIRE(held.ok());
  REQUIRE(held->size() == 2);
  auto queue = t->Queue(true);
  REQUIRE(queue.ok());
  CHECK(queue->jobs_by_status["pending"] == 1);
  CHECK(queue->jobs_by_status["processing"] == 2);
  CHECK(queue->oldest_unfinished_received_at == FormatTime(kT0));
  {  // a done job: counted with count_done only (the console's summary leaves it out)
    Accept(t, MakeEvent("q4"));
    auto fourth = t->ClaimJobs("hostC:1:w0", 1, kT0, 60s);
    REQUIRE(fourth.ok());
    REQUIRE(fourth->size() == 1);
    REQUIRE(t->FinishJob(fourth->front(), Done(kT0 + 1s)).ok());
    auto all = t->Queue(true);
    auto open = t->Queue(false);
    REQUIRE(all.ok());
    REQUIRE(open.ok());
    CHECK(all->jobs_by_status["done"] == 1);
    CHECK(open->jobs_by_status.count("done") == 0);
    CHECK(open->jobs_by_status["pending"] == 1);
    CHECK(open->jobs_by_status["processing"] == 2);
  }
  auto owners = t->LeaseOwners();
  REQUIRE(owners.ok());
  CHECK(*owners == std::vector<std::string>{"hostA:123:w0"});

  REQUIRE(t->ExpireLeases("hostB:", kT0 + 1s).ok());  // another owner: nothing changes
  CHECK(Claim(t, kT0 + 1s).size() == 1);              // only the pending one
  REQUIRE(t->ExpireLeases("hostA:123:", kT0 + 1s).ok());
  auto again = Claim(t, kT0 + 1s);
  CHECK(again.size() == 2);  // the dead owner's jobs run again at once
  for (const auto& job : *held) {
    CHECK(t->FinishJob(job, Done(kT0 + 2s)).status().code() == Status::Code::kConflict);
  }
  for (const auto& job : again) REQUIRE(t->FinishJob(job, Done(kT0 + 2s)).ok());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") ==
        3);  // these two and the one finished above
}

TEST_CASE("List filters by endpoint, status and time, newest first, up to the limit") {
  TestInbox t;
  auto at = [](const std::string& id, TimePoint when) {
    Event e = MakeEvent(id);
    e.received_at = when;
    return e;
  };
  Accept(t, at("old", kT0));
  Accept(t, at("mid", kT0 + 1h));
  Accept(t, at("new", kT0 + 2h));
  Event other = at("elsewhere", kT0 + 3h);
  other.endpoint = "other";
  Accept(t, other);
  auto since = t->List({.filter = {.endpoint = "ep", .since = FormatTime(kT0 + 1h)}, .limit = 10});
  REQUIRE(since.ok());
  REQUIRE(since->size() == 2);
  CHECK((*since)[0].event_id == "new");
  CHECK((*since)[1].event_id == "mid");
  CHECK((*since)[0].received_at == FormatTime(kT0 + 2h));
  auto limited = t->List({.limit = 1});
  REQUIRE(limited.ok());
  REQUIRE(limited->size() == 1);
  CHECK((*limited)[0].event_id == "elsewhere");
  auto none = t->List({.filter = {.status = "processed"}, .limit = 10});
  REQUIRE(none.ok());
  CHECK(none->empty());
}

// The one filter (inbox/filter.h), parsed as the CLI and the console parse it, and evaluated
// by each backend's SQL: the two must select the same rows from the same bodies.
std::set<std::string> Selected(TestInbox& t, std::vector<FilterOption> options) {
  auto filter = ParseFilter(options, kT0 + 24h);
  REQUIRE(filter.ok());
  auto rows = t->List({.filter = *filter, .limit = 1000});
  INFO(rows.status().ToString());
  REQUIRE(rows.ok());
  std::set<std::string> ids;
  for (const InboxRow& r : *rows) ids.insert(r.event_id);
  return ids;
}

TEST_CASE("List filters by type glob, handler and time window") {
  TestInbox t;
  auto add = [&](const std::string& id, const std::string& type, std::string handler,
                 TimePoint at) {
    Event e = MakeEvent(id, {std::move(handler)});
    e.event_type = type;
    e.received_at = at;
    Accept(t, e);
  };
  add("inv-paid", "invoice.paid", "notify", kT0);
  add("inv-created", "invoice.created", "ledger", kT0 + 1h);
  add("charge", "charge.paid", "notify", kT0 + 2h);
  add("upper", "Invoice.paid", "notify", kT0 + 3h);
  add("bracket", "a[b]c", "h", kT0 + 4h);
  add("abc", "abc", "h", kT0 + 4h);
  add("percent", "a%c", "h", kT0 + 4h);
  add("under", "a_c", "h", kT0 + 4h);
  add("slash", "a\\c", "h", kT0 + 4h);

  using Ids = std::set<std::string>;
  // Case-sensitive on both backends; * a run, ? one character, everything else itself.
  CHECK(Selected(t, {{"type", "invoice.*"}}) == Ids{"inv-paid", "inv-created"});
  CHECK(Selected(t, {{"type", "*.paid"}}) == Ids{"inv-paid", "charge", "upper"});
  CHECK(Selected(t, {{"type", "invoice.paid"}}) == Ids{"inv-paid"});
  CHECK(Selected(t, {{"type", "a?c"}}) == Ids{"abc", "percent", "under", "slash"});
  CHECK(Selected(t, {{"type", "a[b]*"}}) == Ids{"bracket"});
  CHECK(Selected(t, {{"type", "a%*"}}) == Ids{"percent"});
  CHECK(Selected(t, {{"type", "a_*"}}) == Ids{"under"});
  CHECK(Selected(t, {{"type", "a\\*"}}) == Ids{"slash"});
  CHECK(Selected(t, {{"type", "a_c"}}) == Ids{"under"});
  CHECK(Selected(t, {{"type", "*"}}).size() == 9);

  CHECK(Selected(t, {{"handler", "ledger"}}) == Ids{"inv-created"});
  CHECK(Selected(t, {{"handler", "notify"}, {"type", "invoice.*"}}) == Ids{"inv-paid"});
  CHECK(Selected(t, {{"handler", "nobody"}}).empty());

  const std::string t1 = FormatTime(kT0 + 1h), t3 = FormatTime(kT0 + 3h);
  CHECK(Selected(t, {{"since", t1}, {"until", t3}}) == Ids{"inv-created", "charge"});
  CHECK(Selected(t, {{"until", t1}}) == Ids{"inv-paid"});
  CHECK(Selected(t, {{"since", "21h"}}).size() == 6);  // now is kT0 + 24h: kT0 + 3h on
  CHECK(Selected(t, {{"status", "pending"}, {"endpoint", "ep"}, {"since", t3}}).size() == 6);
  CHECK(Selected(t, {{"endpoint", "other"}}).empty());
}

TEST_CASE("List filters by body fields: JSON pointers and form fields; other bodies never match") {
  TestInbox t;
  auto add = [&](const std::string& id, const std::string& body) {
    Event e = MakeEvent(id, {"h"}, "", std::nullopt, body);
    e.body_sha256 = "sha-of-" + id;  // text: MakeEvent's would hold the body's bytes
    Accept(t, e);
  };
  add("j1", R"({"data": {"object": {"customer": "cus_1", "amount": 150, "paid": true,
      "tags": ["x", "y"], "a/b": "slash", "m~n": "tilde", "none": null, "obj": {"k": 1}}}})");
  add("j2", R"({"data":{"object":{"customer":"cus_2","amount":"150","paid":false}}})");
  add("not-json", R"({"data":{"object":{"customer":"cus_1"}}} and then some)");
  add("broken-later", R"({"data":{"object":{"customer":"cus_1"}}, "x": tru})");
  add("binary", std::string("\xff\xfe\x00{\"data\"", 10));
  add("dups", R"({"d": 1, "d": 2, "n": 1e2, "s": "caf\u00e9", "z": "a\u0000b"})");
  add("f1", "From=%2B15551234&Body=hello+world&To=x");
  add("f2", "Body=hello%20world");
  add("f3", "XBody=hello+world&Body=hellow");
  add("f4", std::string("junk\0x&To=y", 11));
  add("empty", "");

  using Ids = std::set<std::string>;
  auto where = [&](std::vector<std::string> matches) {
    std::vector<FilterOption> options;
    for (std::string& m : matches) options.emplace_back("where", std::move(m));
    return Selected(t, options);
  };
  CHECK(where({"/data/object/customer=cus_1"}) == Ids{"j1"});
  CHECK(where({"/data/object/customer=cus_2"}) == Ids{"j2"});
  // A number compares as its JSON text, so it matches the string of the same text too.
  CHECK(where({"/data/object/amount=150"}) == Ids{"j1", "j2"});
  CHECK(where({"/data/object/amount=150.0"}).empty());
  CHECK(where({"/data/object/paid=true"}) == Ids{"j1"});
  CHECK(where({"/data/object/paid=false"}) == Ids{"j2"});
  CHECK(where({"/data/object/tags/1=y"}) == Ids{"j1"});
  CHECK(where({"/data/object/tags/01=y"}).empty());
  CHECK(where({"/data/object/tags/-1=y"}).empty());
  CHECK(where({"/data/object/a~1b=slash"}) == Ids{"j1"});
  CHECK(where({"/data/object/m~0n=tilde"}) == Ids{"j1"});
  CHECK(where({"/data/object/none=null"}).empty());
  CHECK(where({"/data/object/none="}).empty());
  CHECK(where({"/data/object/tags=[\"x\",\"y\"]"}).empty());
  CHECK(where({"/data/object/obj/k=1"}) == Ids{"j1"});
  CHECK(where({"/data/object/customer=cus_1", "/data/object/amount=150"}) == Ids{"j1"});
  CHECK(where({"/data/object/customer=cus_1", "/data/object/paid=false"}).empty());
  CHECK(where({"/d=2"}) == Ids{"dups"});  // the last of duplicate members
  CHECK(where({"/d=1"}).empty());
  CHECK(where({"/n=1e2"}) == Ids{"dups"});  // as written
  CHECK(where({"/n=100"}).empty());
  CHECK(where({"/s=caf\xc3\xa9"}) == Ids{"dups"});
  CHECK(where({"/z=a\xef\xbf\xbd"
               "b"}) == Ids{"dups"});  // \u0000 is read as U+FFFD

  CHECK(where({"form:Body=hello world"}) == Ids{"f1", "f2"});
  CHECK(where({"form:From=+15551234"}) == Ids{"f1"});
  CHECK(where({"form:To=x"}) == Ids{"f1"});
  CHECK(where({"form:To=y"}) == Ids{"f4"});
  CHECK(where({"form:Body=hello"}).empty());
  CHECK(where({"form:Body=hellow"}) == Ids{"f3"});
  CHECK(where({"form:Body=hello world", "form:To=x"}) == Ids{"f1"});
  CHECK(where({"form:customer=cus_1"}).empty());
  // The whole inbox scanned by a pointer: every kind of body, and no error.
  CHECK(where({"/x=y"}).empty());
  CHECK(Selected(t, {{"where", "/data/object/customer=cus_1"},
                     {"endpoint", "ep"},
                     {"status", "pending"}}) == Ids{"j1"});
}

TEST_CASE("List pages by keyset and finds one event id; every row once, in order") {
  TestInbox t;
  // Several rows share a received_at, so the page boundary must break ties by id.
  std::vector<std::string> expected;  // newest first
  for (int i = 0; i < 25; ++i) {
    Event e = MakeEvent("ev-" + std::to_string(i));
    e.received_at = kT0 + std::chrono::seconds(i / 3);
    Accept(t, e);
    expected.insert(expected.begin(), e.event_id);
  }
  std::vector<std::string> seen;
  ListFilter page{.limit = 4};
  for (int pages = 0; pages < 20; ++pages) {
    auto rows = t->List(page);
    REQUIRE(rows.ok());
    for (const InboxRow& r : *rows) seen.push_back(r.event_id);
    if (rows->size() < 4) break;
    page.before_received_at = rows->back().received_at;
    page.before_id = rows->back().id;
  }
  CHECK(seen == expected);

  auto one = t->List({.event_id = "ev-7", .limit = 10});
  REQUIRE(one.ok());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].event_id == "ev-7");
  auto elsewhere = t->List({.filter = {.endpoint = "other"}, .event_id = "ev-7", .limit = 10});
  REQUIRE(elsewhere.ok());
  CHECK(elsewhere->empty());
}

TEST_CASE("DeadJobs lists dead jobs newest first with their last error, by pages") {
  TestInbox t;
  for (int i = 0; i < 3; ++i) {
    Accept(t, MakeEvent("dead-" + std::to_string(i)));
    auto jobs = t->ClaimJobs("w", 10, kT0, 30s);
    REQUIRE(jobs.ok());
    REQUIRE(jobs->size() == 1);
    JobOutcome o;
    o.outcome = Outcome::kFailed;
    o.detail = "boom " + std::to_string(i);
    o.next = JobOutcome::Next::kDead;
    o.finished_at = kT0 + 1s;
    REQUIRE(t->FinishJob(jobs->front(), o).ok());
  }
  Accept(t, MakeEvent("alive"));
  auto dead = t->DeadJobs(0, 2);
  REQUIRE(dead.ok());
  REQUIRE(dead->size() == 2);
  CHECK((*dead)[0].row.event_id == "dead-2");
  CHECK((*dead)[0].last_error == "boom 2");
  CHECK((*dead)[0].row.status == "dead");
  CHECK((*dead)[0].attempts == 1);
  CHECK((*dead)[1].row.event_id == "dead-1");
  auto rest = t->DeadJobs((*dead)[1].job_id, 2);
  REQUIRE(rest.ok());
  REQUIRE(rest->size() == 1);
  CHECK((*rest)[0].row.event_id == "dead-0");
}

TEST_CASE("replicas: batch claims of many-handler events never fail on each other") {
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kEvents = 40;
  for (int n = 0; n < kEvents; ++n) Accept(t, MakeEvent("m" + std::to_string(n), {"a", "b", "c"}));
  std::atomic<int> finished{0}, errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      Inbox& inbox = *inboxes[i % 2];
      auto deadline = std::chrono::steady_clock::now() + 30s;
      while (finished < 3 * kEvents && std::chrono::steady_clock::now() < deadline) {
        auto c = inbox.ClaimJobs("w" + std::to_string(i), 4, kT0, 60s);
        if (!c.ok()) {
          ++errors;
          continue;
        }
        // Finished in reverse, so transactions touch the same rows in different orders.
        for (auto it = c->rbegin(); it != c->rend(); ++it) {
          if (inbox.FinishJob(*it, Done(kT0)).ok())
            ++finished;
          else
            ++errors;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(finished == 3 * kEvents);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == kEvents);
}

// The SQLite inbox copies its WAL into the database on a thread of its own and starts the
// WAL file over only in a short exclusive turn (CheckpointLoop in sqlite_inbox.cc): under
// writes that never pause, the WAL must still start over, and stay bounded. The WAL header's
// checkpoint sequence number (bytes 12-15, big-endian) counts the times it started over.
// On PostgreSQL the same load runs as a test of grouped accepts with large bodies.
TEST_CASE("continuous writes: the WAL starts over without a pause in the writes, stays bounded") {
  TestInbox t;
  const std::string wal = t.database + "-wal";
  auto restarts = [&]() -> uint32_t {
    std::ifstream f(wal, std::ios::binary);
    unsigned char h[16] = {};
    if (!f.read(reinterpret_cast<char*>(h), sizeof h)) return 0;
    return uint32_t{h[12]} << 24 | uint32_t{h[13]} << 16 | uint32_t{h[14]} << 8 | h[15];
  };
  // 32 KiB bodies: about 9 WAL pages an event, so the WAL passes its restart point (8,000
  // pages) every ~900 events; at most 7,200 events (~65,000 pages: past the forced restart
  // at 32,000 twice), stopping once it has started over twice.
  constexpr int kThreads = 8, kMaxEach = 900;
  const std::string body(32 * 1024, 'x');
  std::atomic<bool> enough{false};
  std::atomic<int> accepted{0}, failed{0};
  std::atomic<uintmax_t> largest{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kMaxEach && !enough; ++n) {
        Event e = MakeEvent("big-" + std::to_string(i) + "-" + std::to_string(n), {"h"}, "",
                            std::nullopt, body + std::to_string(n));
        auto r = t->Accept(e);
        (r.ok() && r->verdict == Verdict::kAccepted ? accepted : failed)++;
        if (OnPostgres() || n % 20 != 0) continue;
        std::error_code ec;
        const uintmax_t size = std::filesystem::file_size(wal, ec);
        if (!ec && size > largest) largest = size;
        if (i == 0 && restarts() >= 2) enough = true;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox") == accepted);
  CHECK(t.Count("SELECT count(*) FROM jobs") == accepted);
  if (OnPostgres()) return;
  INFO("events " << accepted << ", WAL restarts " << restarts() << ", largest WAL " << largest);
  CHECK(restarts() >= 2);
  // Bounded: the forced restart at 32,000 pages (128 MiB) plus the groups that commit while
  // its turn waits for the group in hand.
  CHECK(largest < uintmax_t{160} << 20);
  CHECK(t.Count("SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'") == 1);
}

// Issue 29, defect 1: a job whose handler the claiming process lacks is given back held,
// never run by another handler nor made dead; its try is refunded and no attempt recorded.
TEST_CASE("a held job is not claimable, keeps its resource's order, and is released by name") {
  TestInbox t;
  REQUIRE(Accept(t, MakeEvent("a", {"old"}, "cus_1", 1)) == Verdict::kAccepted);
  REQUIRE(Accept(t, MakeEvent("b", {"new"}, "cus_1", 2)) == Verdict::kAccepted);
  auto claimed = Claim(t, kT0);
  REQUIRE(claimed.size() == 1);  // b waits behind a: one resource, received order
  REQUIRE(claimed[0].handler == "old");
  REQUIRE(t->HoldForHandler(claimed, kT0).ok());

  CHECK(t.Count("SELECT count(*) FROM jobs WHERE handler = 'old' AND status = 'pending'"
                " AND attempts = 0 AND last_error LIKE 'held: handler old is not configured%'") ==
        1);
  CHECK(t.Count("SELECT count(*) FROM attempts") == 0);  // nothing ran
  // Not claimable even a year later, and still ahead of b in its resource.
  CHECK(Claim(t, kT0 + std::chrono::hours(24 * 365)).empty());

  auto backlog = t->UnfinishedByHandler();
  REQUIRE(backlog.ok());
  REQUIRE(backlog->size() == 2);
  CHECK((*backlog)[1].handler == "old");
  CHECK((*backlog)[1].unfinished == 1);
  CHECK((*backlog)[1].held == 1);
  CHECK((*backlog)[0].held == 0);

  // Releasing another handler's jobs changes nothing; its own releases it.
  auto none = t->ReleaseHeld({{"ep", "new"}, {"other-endpoint", "old"}}, kT0);
  REQUIRE(none.ok());
  CHECK(*none == 0);
  auto released = t->ReleaseHeld({{"ep", "old"}}, kT0 + 1s);
  REQUIRE(released.ok());
  CHECK(*released == 1);
  auto again = Claim(t, kT0 + 1s);
  REQUIRE(again.size() == 1);
  CHECK(again[0].handler == "old");
  CHECK(again[0].budget_used == 1);  // the held claim's try was given back
  CHECK(again[0].event.attempt == 1);
}

TEST_CASE("a hold whose lease was taken over changes nothing") {
  TestInbox t;
  REQUIRE(Accept(t, MakeEvent("a", {"old"})) == Verdict::kAccepted);
  auto first = Claim(t, kT0, 10, 1s);
  REQUIRE(first.size() == 1);
  auto second = Claim(t, kT0 + 2s);  // the first lease ran out
  REQUIRE(second.size() == 1);
  REQUIRE(t->HoldForHandler(first, kT0 + 3s).ok());
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'processing'") == 1);
  CHECK(t->FinishJob(second[0], Done(kT0 + 3s)).ok());
}

TEST_CASE("reassign moves held, pending and dead jobs of a handler; drop deletes them") {
  TestInbox t;
  REQUIRE(Accept(t, MakeEvent("a", {"old"})) == Verdict::kAccepted);
  REQUIRE(Accept(t, MakeEvent("b", {"old", "new"})) == Verdict::kAccepted);
  REQUIRE(Accept(t, MakeEvent("c", {"old"})) == Verdict::kAccepted);
  auto claimed = Claim(t, kT0);
  REQUIRE(claimed.size() == 4);
  std::vector<ClaimedJob> old_a;
  for (const ClaimedJob& c : claimed) {
    if (c.handler == "old" && c.event.event_id == "a") old_a.push_back(c);
    if (c.handler == "new") REQUIRE(t->FinishJob(c, Done(kT0)).ok());
    if (c.handler == "old" && c.event.event_id != "a") {
      JobOutcome dead = Done(kT0);
      dead.outcome = Outcome::kPermanent;
      dead.next = JobOutcome::Next::kDead;
      REQUIRE(t->FinishJob(c, dead).ok());
    }
  }
  REQUIRE(t->HoldForHandler(old_a, kT0).ok());

  auto moved = t->Reassign("ep", "old", "new", kT0 + 1s);
  REQUIRE(moved.ok());
  CHECK(moved->moved == 2);  // a (held: due now) and c (dead: stays dead)
  CHECK(moved->kept == 1);   // b already has a job of "new"
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE handler = 'new' AND status = 'dead'") == 1);
  auto due = Claim(t, kT0 + 1s);
  REQUIRE(due.size() == 1);
  CHECK(due[0].event.event_id == "a");
  CHECK(due[0].handler == "new");
  REQUIRE(t->FinishJob(due[0], Done(kT0 + 1s)).ok());

  // b's row: its "new" job done, its dead "old" job dropped: the row settles processed.
  auto dropped = t->DropJobs("ep", "old", kT0 + 2s);
  REQUIRE(dropped.ok());
  CHECK(*dropped == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE handler = 'old'") == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'b' AND status = 'processed'") == 1);
  // Nothing of another endpoint or a done job is touched.
  auto none = t->DropJobs("other", "new", kT0 + 2s);
  REQUIRE(none.ok());
  CHECK(*none == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'done'") == 2);
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
    CHECK(j.event.IdempotencyKey() == "ep:" + j.event.event_id + ":replay-1");
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
  CHECK(gen2[0].event.IdempotencyKey().ends_with(":replay-2"));
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

TEST_CASE("WalBytes: the SQLite inbox's -wal file grows with commits; none on PostgreSQL") {
  TestInbox t;
  auto before = t->WalBytes();
  if (OnPostgres()) {
    CHECK_FALSE(before.has_value());  // PostgreSQL's WAL is the server's
    return;
  }
  REQUIRE(before.has_value());
  for (int i = 0; i < 20; ++i)
    CHECK(Accept(t, MakeEvent("wal-" + std::to_string(i))) == Verdict::kAccepted);
  auto after = t->WalBytes();
  REQUIRE(after.has_value());
  CHECK(*after > *before);
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
  REQUIRE(t->PrepareSql(sql).ok());
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
