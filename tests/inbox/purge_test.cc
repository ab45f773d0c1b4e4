// The Inbox contract, Purge (inbox_admin.h, PurgeRequest): exactly the rows past retention go,
// in batches, never a dead row while another of its jobs waits or runs, nor one a retry
// re-arms while the purge runs, and a dry run counts what a purge then deletes. Part of the
// storage contract suite, on SQLite and PostgreSQL (tests/inbox/contract.h).
#include <catch2/catch.hpp>
#include <functional>
#include <thread>

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

namespace {

// An event received 40 days before kT0 whose every job ended dead: a row a purge with 30 days
// of dead retention deletes.
void AcceptDead(TestInbox& t, const std::string& endpoint, const std::string& id,
                std::vector<std::string> handlers) {
  Event e = MakeEvent(id, std::move(handlers));
  e.endpoint = endpoint;
  e.received_at = kT0 - std::chrono::hours(24 * 40);
  Accept(t, e);
  JobOutcome dead;
  dead.outcome = Outcome::kPermanent;
  dead.next = JobOutcome::Next::kDead;
  dead.finished_at = kT0;
  for (const ClaimedJob& j : Claim(t, kT0)) REQUIRE(t->FinishJob(j, dead).ok());
}

}  // namespace

TEST_CASE("purge keeps a dead row that a retry re-arms while the purge waits for it") {
  // `inbox retry --dead` beside `purge` (issue 41, finding 6): on PostgreSQL the purge chose
  // the row while the retry's transaction had re-armed it but not committed, waited for the
  // row, and deleted it and its now pending jobs. A trigger holds the retry's transaction
  // (rows and jobs updated, locks held) in a sleep, and the purge starts while it sleeps. On
  // SQLite (one writer) the same sequence runs without the trigger: the retry's transaction
  // and the purge's cannot overlap there.
  TestInbox t;
  AcceptDead(t, "ep", "rearmed", {"a", "b"});
  AcceptDead(t, "other", "bystander", {"a"});  // dead, old, no retry: the purge deletes it
  REQUIRE(t.Count("SELECT count(*) FROM jobs WHERE status = 'dead'") == 3);

  // Each retry of ep's row, with what it re-arms and the row's status after it.
  std::function<StatusOr<int64_t>(Inbox&)> retry;
  int64_t rearms = 0;
  std::string row_after;
  SECTION("inbox retry --dead: the whole row") {
    retry = [](Inbox& inbox) {
      BulkRequest r;
      r.filter.endpoint = "ep";
      r.now = kT0 + 1h;
      return inbox.RetryDead(r);
    };
    rearms = 2;
    row_after = "pending";
  }
  SECTION("inbox retry --dead --handler: the row stays dead, one job of it is pending") {
    retry = [](Inbox& inbox) {
      BulkRequest r;
      r.filter.endpoint = "ep";
      r.filter.handler = "a";
      r.now = kT0 + 1h;
      return inbox.RetryDead(r);
    };
    rearms = 1;
    row_after = "dead";
  }
  SECTION("inbox retry ENDPOINT ID") {
    retry = [](Inbox& inbox) -> StatusOr<int64_t> {
      auto n = inbox.Retry("ep", "rearmed", kT0 + 1h);
      if (!n.ok()) return n.status();
      return int64_t{*n};
    };
    rearms = 2;
    row_after = "pending";
  }

  if (t.pg) {
    // Any update of a dead row (a retry's, which re-arms it) sleeps in the retry's
    // transaction, after its jobs and its row are updated and locked.
    REQUIRE(t.pg->Query("CREATE FUNCTION slow_rearm() RETURNS trigger LANGUAGE plpgsql AS $$"
                        " BEGIN PERFORM pg_sleep(1.5); RETURN NULL; END $$;"
                        " CREATE TRIGGER slow_rearm AFTER UPDATE ON inbox FOR EACH ROW"
                        " WHEN (OLD.status = 'dead') EXECUTE FUNCTION slow_rearm()") == "");
  }
  // The retry runs as `hookbox inbox retry` would, beside the purge: an inbox of its own.
  std::unique_ptr<Inbox> operator_inbox = t.OpenAnother();
  StatusOr<int64_t> retried = Status::Internal("not run");
  std::thread retrying([&] { retried = retry(*operator_inbox); });
  if (t.pg) {
    // The purge starts once the retry's transaction sleeps in the trigger, holding the row.
    bool sleeping = false;
    for (int i = 0; i < 1000 && !sleeping; ++i) {
      sleeping = t.Count(
                     "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
                     " AND datname = current_database()") > 0;
      if (!sleeping) std::this_thread::sleep_for(10ms);
    }
    CHECK(sleeping);
  } else {
    retrying.join();
  }
  PurgeRequest r;
  r.processed_before = kT0 - std::chrono::hours(24 * 7);
  r.dead_before = kT0 - std::chrono::hours(24 * 30);
  r.sequences_before = kT0 - std::chrono::hours(24 * 90);
  auto purged = t->Purge(r);
  if (retrying.joinable()) retrying.join();

  REQUIRE(retried.ok());
  CHECK(*retried == rearms);
  REQUIRE(purged.ok());
  CHECK(purged->dead == 1);  // the bystander
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE endpoint = 'other'") == 0);
  // The re-armed row and its jobs survive: re-armed, as the retry said.
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'rearmed' AND status = '" + row_after +
                "'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs WHERE status = 'pending'") == rearms);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 2);
}
