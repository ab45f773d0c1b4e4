// The Inbox contract, sync endpoints (inbox.h: ClaimEvent, HoldJobs, RenewLeases): the
// request that accepts an event claims its jobs (the pool never takes them), its leases are
// renewed while it runs, and a sync sql handler's side effect commits with the inbox row or
// not at all. Part of the storage contract suite, on SQLite and PostgreSQL
// (tests/inbox/contract.h).
#include <atomic>
#include <catch2/catch.hpp>
#include <span>
#include <thread>
#include <vector>

#include "handlers/sql/sql.h"
#include "inbox/inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

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
  // A request runs its jobs one after another: without a renewal the lease its accept took
  // would run out under the last of them, and a duplicate would take that job over while it
  // ran.
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
  CHECK(lost.conflict() == Status::ConflictKind::kLeaseLost);
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
  REQUIRE(t->PrepareWork(sql).ok());
  Event e = MakeEvent("pay-1", {"ledger"});
  e.sync_owner = "request";
  e.sync_lease = 30s;
  e.sync_work = {{"ledger", &sql}};
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
  f.sync_work = {{"ledger", &clash}};
  auto failed = t->Accept(f);
  CHECK(failed.status().code() == Status::Code::kInternal);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'pay-2'") == 0);
  CHECK(t.Count("SELECT count(*) FROM credits") == 1);
}

TEST_CASE("sync sql: a statement that ends the accept's savepoint and then fails stores nothing") {
  // The sql handler refuses transaction control at load (handlers/sql); the inbox does not
  // rely on it. On SQLite `RELEASE w` ends the savepoint the group commit set for this write,
  // so the rollback to it fails: the whole group's transaction must go, not commit the
  // half-run write. On PostgreSQL there is no such savepoint, and the statement fails.
  TestInbox t;
  SqlWork setup;
  setup.setup = {"CREATE TABLE IF NOT EXISTS credits (event_id TEXT PRIMARY KEY, body TEXT)"};
  REQUIRE(t->PrepareWork(setup).ok());
  SqlWork sql;
  sql.statements = {"INSERT INTO credits VALUES (:event_id, :body)", "RELEASE w",
                    "INSERT INTO credits VALUES (:event_id, :body)"};
  Event e = MakeEvent("pay-1", {"ledger"});
  e.sync_owner = "request";
  e.sync_lease = 30s;
  e.sync_work = {{"ledger", &sql}};
  auto failed = t->Accept(e);
  REQUIRE_FALSE(failed.ok());
  CHECK(t.Count("SELECT count(*) FROM inbox") == 0);
  CHECK(t.Count("SELECT count(*) FROM credits") == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 0);

  // The write ends a savepoint after its insert. A write alone in its group has no
  // savepoint on SQLite either (its transaction is its own), so RELEASE w fails as it does
  // on PostgreSQL; in a group of several it would end the write's savepoint and the group's
  // own RELEASE would fail instead. Either way nothing of it is committed.
  sql.statements = {"INSERT INTO credits VALUES (:event_id, :body)", "RELEASE w"};
  auto released = t->Accept(e);
  REQUIRE_FALSE(released.ok());
  CHECK(t.Count("SELECT count(*) FROM inbox") == 0);
  CHECK(t.Count("SELECT count(*) FROM credits") == 0);

  // The writer goes on: the next accept commits as usual.
  sql.statements = {"INSERT INTO credits VALUES (:event_id, :body)"};
  REQUIRE(t->Accept(e).ok());
  CHECK(t.Count("SELECT count(*) FROM inbox") == 1);
  CHECK(t.Count("SELECT count(*) FROM credits") == 1);
}

TEST_CASE("sync sql: in concurrent accepts, a failing statement rolls back its own write only") {
  // Sixteen threads keep the writer's queue full, so groups of several writes form (SQLite:
  // one transaction, a savepoint per write); every tenth event of thread 0 runs a statement
  // that fails. Each failed accept leaves nothing; every other one is stored with its row.
  TestInbox t;
  SqlWork setup;
  setup.setup = {"CREATE TABLE IF NOT EXISTS credits (event_id TEXT PRIMARY KEY, body TEXT)",
                 "INSERT INTO credits VALUES ('taken', '')"};
  REQUIRE(t->PrepareWork(setup).ok());
  SqlWork good_sql, bad_sql;
  good_sql.statements = {"INSERT INTO credits VALUES (:event_id, :body)"};
  bad_sql.statements = {"INSERT INTO credits VALUES (:event_id, :body)",
                        "INSERT INTO credits VALUES ('taken', 'again')"};
  constexpr int kThreads = 16, kEach = 30;
  std::atomic<int> accepted{0}, failed{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kEach; ++n) {
        const bool bad = i == 0 && n % 10 == 0;
        Event e = MakeEvent((bad ? "bad-" : "good-") + std::to_string(i) + "-" + std::to_string(n),
                            {"ledger"});
        e.sync_owner = "request-" + std::to_string(i);
        e.sync_lease = 30s;
        e.sync_work = {{"ledger", bad ? &bad_sql : &good_sql}};
        auto r = t->Accept(e);
        if (r.ok() && r->verdict == Verdict::kAccepted)
          ++accepted;
        else if (!r.ok() && r.status().code() == Status::Code::kInternal)
          ++failed;
        else
          ++other;
      }
    });
  }
  for (auto& th : threads) th.join();
  const int bad = kEach / 10, good = kThreads * kEach - bad;
  CHECK(other == 0);
  CHECK(failed == bad);
  CHECK(accepted == good);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id LIKE 'good-%'") == good);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id LIKE 'bad-%'") == 0);
  CHECK(t.Count("SELECT count(*) FROM credits WHERE event_id LIKE 'good-%'") == good);
  CHECK(t.Count("SELECT count(*) FROM credits WHERE event_id LIKE 'bad-%'") == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                " WHERE i.event_id LIKE 'good-%' AND j.status = 'done'") == good);
}

TEST_CASE("sync: Clear of an event whose request holds its jobs is refused at once") {
  // On PostgreSQL the request that runs an event holds its jobs' rows (HoldJobs) for the
  // whole run; Clear must refuse it as a running event (409 in the console, exit 3 in the
  // CLI), not wait out the pool's lock_timeout and answer that storage is busy.
  TestInbox t;
  Event e = MakeEvent("s", {"h1"});
  e.sync_owner = "request-1";
  e.sync_lease = 30s;
  auto r = t->Accept(e);
  REQUIRE(r.ok());
  REQUIRE(r->claimed.size() == 1);
  auto hold = t->HoldJobs(r->claimed);
  if (OnPostgres()) REQUIRE(hold != nullptr);

  const Status refused = t->Clear("ep", "s", kT0 + 1s);
  CHECK(refused.code() == Status::Code::kConflict);
  CHECK(refused.conflict() == Status::ConflictKind::kEventBusy);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 's'") == 1);
  if (OnPostgres()) {
    // After the lease has run out only the hold's row locks say the event runs (a request
    // that outlives its lease still runs it): still refused, so the hold locks its jobs.
    const Status held = t->Clear("ep", "s", kT0 + 60s);
    CHECK(held.conflict() == Status::ConflictKind::kEventBusy);
    CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 's'") == 1);
  }

  // The run ends: its result recorded, its hold released. Now the row can go.
  REQUIRE(t->FinishJob(r->claimed[0], Done(kT0 + 2s)).ok());
  hold.reset();
  CHECK(t->Clear("ep", "s", kT0 + 3s).ok());
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 's'") == 0);
}
