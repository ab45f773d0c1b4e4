// The Inbox contract, jobs whose handler is gone (inbox.h: HoldForHandler, ReleaseHeld,
// Reassign, DropJobs; DESIGN.md, "Handler names"): a held job is never run by another
// handler nor made dead, keeps its resource's order, and is released, reassigned or dropped
// by name. Part of the storage contract suite, on SQLite and PostgreSQL
// (tests/inbox/contract.h).
#include <catch2/catch.hpp>

#include "inbox/inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

// A job whose handler the claiming process lacks is given back held, never run by another
// handler nor made dead; its try is refunded and no attempt recorded.
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
