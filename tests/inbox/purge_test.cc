// The Inbox contract, Purge (inbox.h, PurgeRequest): exactly the rows past retention go,
// in batches, never a dead row while another of its jobs waits or runs, and a dry run counts
// what a purge then deletes. Part of the storage contract suite, on SQLite and PostgreSQL
// (tests/inbox/contract.h).
#include <catch2/catch.hpp>

#include "inbox/inbox.h"
#include "inbox/sql_inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

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
  // A row is dead as soon as one job is, and the purge must not delete it while its other
  // jobs are still pending or running.
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

TEST_CASE("purge's batch halves while slow and doubles while fast, within the request's batch") {
  using std::chrono::milliseconds;
  CHECK(NextPurgeBatch(1000, 1000, milliseconds(50)) == 500);
  CHECK(NextPurgeBatch(500, 1000, milliseconds(1)) == 1000);
  CHECK(NextPurgeBatch(1000, 1000, milliseconds(1)) == 1000);  // never above the request's
  CHECK(NextPurgeBatch(600, 1000, milliseconds(10)) == 600);   // between: kept
  CHECK(NextPurgeBatch(12, 1000, milliseconds(50)) == 10);     // the floor
  // A request for batches under the floor keeps to its own size: halving 5 gave 10 before.
  CHECK(NextPurgeBatch(5, 5, milliseconds(50)) == 5);
  CHECK(NextPurgeBatch(1, 1, milliseconds(50)) == 1);
}
