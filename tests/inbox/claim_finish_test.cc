// The Inbox contract, ClaimJobs and FinishJob(s) (job_queue.h): a lease held against a second
// claim, the compare-and-swap that lets only the lease's holder finish, a sql handler's
// statements committed with the finish (one savepoint each in a batch), each finish recording
// its own try, output that is not UTF-8, and the queue's counts (crash recovery, the leases of
// owners that died: liveness_test.cc). Part of the storage contract suite, on SQLite and
// PostgreSQL (tests/inbox/contract.h).
#include <sqlite3.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "handlers/sql/sql.h"
#include "inbox/inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

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

TEST_CASE("sql handler statements commit with the job, or not at all") {
  TestInbox t;
  SqlWork sql;
  sql.setup = {"CREATE TABLE IF NOT EXISTS effects (event_id TEXT PRIMARY KEY, kind TEXT)"};
  sql.statements = {"INSERT INTO effects (event_id, kind) VALUES (:event_id, :type)"};
  REQUIRE(t->PrepareWork(sql).ok());
  REQUIRE(t->PrepareWork(sql).ok());  // setup is idempotent

  Accept(t, MakeEvent("s1"));
  auto job = Claim(t, kT0);
  REQUIRE(job.size() == 1);
  const JobOutcome if_failed = RetryAt(kT0 + 1s);
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
  CHECK_FALSE(t->PrepareWork(broken).ok());
}

TEST_CASE("a sql handler's parameter whose type the server cannot infer runs as text") {
  // PostgreSQL cannot type `$2 IS NOT NULL` (SQLSTATE 42P18) and prepares the statement
  // again with every parameter text; SQLite has no types to infer.
  TestInbox t;
  SqlWork sql;
  sql.setup = {"CREATE TABLE IF NOT EXISTS typed (event_id TEXT PRIMARY KEY)"};
  sql.statements = {"INSERT INTO typed (event_id) SELECT :event_id WHERE :type IS NOT NULL"};
  REQUIRE(t->PrepareWork(sql).ok());
  Accept(t, MakeEvent("u1"));
  auto job = Claim(t, kT0);
  REQUIRE(job.size() == 1);
  const JobOutcome if_failed = RetryAt(kT0 + 1s);
  auto recorded = t->FinishJob(job[0], Done(kT0), &sql, &if_failed);
  REQUIRE(recorded.ok());
  CHECK(*recorded == Outcome::kOk);
  CHECK(t.Count("SELECT count(*) FROM typed WHERE event_id = 'u1'") == 1);
}

TEST_CASE("FinishJobs: one batch, each finish its own compare-and-swap and sql savepoint") {
  TestInbox t;
  SqlWork sql;
  sql.setup = {"CREATE TABLE IF NOT EXISTS batch_effects (event_id TEXT PRIMARY KEY)"};
  sql.statements = {"INSERT INTO batch_effects (event_id) VALUES (:event_id)"};
  REQUIRE(t->PrepareWork(sql).ok());
  SqlWork clash;  // fails: b1's row is already there when it runs
  clash.statements = {"INSERT INTO batch_effects (event_id) VALUES ('b1')"};
  for (const char* id : {"b1", "b2", "b3", "b4"}) Accept(t, MakeEvent(id));
  auto jobs = Claim(t, kT0);
  REQUIRE(jobs.size() == 4);
  // b3's lease is lost: it ran out and another worker took the job over.
  ClaimedJob stale = jobs[2];
  stale.lease_token = "not-the-token";

  const JobOutcome if_failed = RetryAt(kT0 + 1s);
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

namespace {

// One job each for `ids`, accepted and claimed; the jobs in the order of their event ids.
std::vector<ClaimedJob> AcceptAndClaim(TestInbox& t, std::initializer_list<const char*> ids) {
  for (const char* id : ids) Accept(t, MakeEvent(id));
  auto jobs = Claim(t, kT0);
  REQUIRE(jobs.size() == ids.size());
  std::sort(jobs.begin(), jobs.end(), [](const ClaimedJob& a, const ClaimedJob& b) {
    return a.event.event_id < b.event.event_id;
  });
  return jobs;
}

// A trigger that refuses to record the attempt of a finish whose detail is "refused", run on
// a connection of its own, as an operator's DDL.
void RefuseDetail(TestInbox& t) {
  if (t.pg) {
    t.pg->Query(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        " IF NEW.detail = 'refused' THEN RAISE EXCEPTION 'refused by the test'; END IF;"
        " RETURN NEW; END $$;"
        " CREATE TRIGGER refuse BEFORE UPDATE ON attempts FOR EACH ROW EXECUTE FUNCTION refuse()");
    return;
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(t.database.c_str(), &db) == SQLITE_OK);
  const int rc = sqlite3_exec(db,
                              "CREATE TRIGGER refuse BEFORE UPDATE ON attempts"
                              " WHEN NEW.detail = 'refused' BEGIN"
                              " SELECT RAISE(ABORT, 'refused by the test'); END",
                              nullptr, nullptr, nullptr);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

}  // namespace

TEST_CASE("a finish records its own try: the earlier tries of its job stay as they were") {
  TestInbox t;
  for (const char* id : {"a", "b", "c"}) Accept(t, MakeEvent(id));
  auto first = Claim(t, kT0);
  REQUIRE(first.size() == 3);
  for (const ClaimedJob& job : first) {
    JobOutcome failed = RetryAt(kT0 + 10s);
    failed.finished_at = kT0 + 1s;
    failed.detail = "exit 1";
    REQUIRE(t->FinishJob(job, failed).ok());
  }
  auto second = Claim(t, kT0 + 10s);
  REQUIRE(second.size() == 3);
  std::sort(second.begin(), second.end(),
            [](const ClaimedJob& x, const ClaimedJob& y) { return x.job_id < y.job_id; });
  for (const ClaimedJob& job : second) CHECK(job.event.attempt == 2);
  // Two at once (FinishMany), one alone (FinishJob).
  auto results = t->FinishJobs(
      {{&second[0], Done(kT0 + 11s), nullptr, {}}, {&second[1], Done(kT0 + 12s), nullptr, {}}});
  for (const auto& r : results) REQUIRE(r.ok());
  REQUIRE(t->FinishJob(second[2], Done(kT0 + 13s)).ok());
  const char* events[] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    auto shown = t->Show("ep", events[i]);
    REQUIRE(shown.ok());
    REQUIRE(shown->jobs.size() == 1);
    const auto& tries = shown->jobs[0].attempt_rows;
    REQUIRE(tries.size() == 2);
    CHECK(tries[0].number == 1);
    CHECK(tries[0].outcome == "failed");
    CHECK(tries[0].detail == "exit 1");
    CHECK(tries[0].finished_at == FormatTime(kT0 + 1s));
    CHECK(tries[1].number == 2);
    CHECK(tries[1].outcome == "ok");
    CHECK(tries[1].finished_at == FormatTime(kT0 + std::chrono::seconds(11 + i)));
  }
}

TEST_CASE("FinishJobs: a finish the database refuses fails alone; the rest of the batch lands") {
  TestInbox t;
  auto jobs = AcceptAndClaim(t, {"a", "b", "c"});
  RefuseDetail(t);
  JobOutcome refused = Done(kT0 + 1s);
  refused.detail = "refused";
  // No sql: on PostgreSQL the batch's one statement fails as a whole, and the batch is run
  // again finish by finish, each in a savepoint of its own.
  auto results = t->FinishJobs({{&jobs[0], Done(kT0 + 1s), nullptr, {}},
                                {&jobs[1], refused, nullptr, {}},
                                {&jobs[2], Done(kT0 + 1s), nullptr, {}}});
  REQUIRE(results.size() == 3);
  CHECK(results[0].ok());
  CHECK_FALSE(results[1].ok());
  CHECK(results[2].ok());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 2);
  // The refused one changed nothing: still leased to its worker, its attempt open.
  CHECK(t.Count("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                " WHERE i.event_id = 'b' AND j.status = 'processing'"
                " AND j.lease_token IS NOT NULL") == 1);
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE finished_at IS NULL") == 1);
  // Its worker may finish it again (the lease still holds), with a detail the trigger lets by.
  auto again = t->FinishJob(jobs[1], Done(kT0 + 2s), nullptr, nullptr);
  REQUIRE(again.ok());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 3);
}

TEST_CASE("finishes whose handler output is not UTF-8 are stored with U+FFFD, on both") {
  TestInbox t;
  auto jobs = AcceptAndClaim(t, {"good", "bad", "alone"});  // alone, bad, good
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
    // Both backends store the same: each bad byte, the NUL and each byte of the encoded
    // surrogate become U+FFFD; é stays.
    const std::string sanitised = "stderr: \uFFFD\uFFFD\uFFFD \u00e9 \uFFFD\uFFFD\uFFFD";
    CHECK(shown->jobs[0].attempt_rows[0].detail == sanitised);
    CHECK(shown->jobs[0].last_error == sanitised);
  }
}

TEST_CASE("queue stats: jobs by status and the oldest unfinished job") {
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
  for (const auto& job : *held) REQUIRE(t->FinishJob(job, Done(kT0 + 2s)).ok());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") ==
        3);  // these two and the one finished above
}
