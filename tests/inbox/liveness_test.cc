// The Inbox contract, lease liveness (job_queue.h: Heartbeat, ReleaseExpiredLeases,
// RemoveInstance): a lease ends before its lease_until only when its owner's instance has
// stopped beating or removed itself. A fresh heartbeat keeps every lease of its instance,
// an expired one's leases end at once (and once), an owner with no instance row (an older
// hookbox's "<host>:<pid>:...") keeps its lease to its end, and no instance ends its own.
// Part of the storage contract suite, on SQLite and PostgreSQL (tests/inbox/contract.h).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "inbox/inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

namespace {

// Instance ids as InstanceId() draws them (32 hex characters), and one that is the start of
// another's, so that an owner's prefix is seen to need its colon.
const std::string kA = "0123456789abcdef0123456789abcdef";
const std::string kB = "fedcba9876543210fedcba9876543210";
const std::string kAShort = "0123456789abcdef";

void Beat(TestInbox& t, const std::string& id, TimePoint now,
          std::chrono::milliseconds timeout = 30s) {
  REQUIRE(t->Heartbeat({id, "host-" + id.substr(0, 4), 4242, now, timeout}).ok());
}

// Accepts event `id` and claims its job for `owner` with a long lease (10 min).
ClaimedJob AcceptAndClaim(TestInbox& t, const std::string& id, const std::string& owner) {
  Accept(t, MakeEvent(id));
  auto claimed = t->ClaimJobs(owner, 1, kT0, 600s);
  REQUIRE(claimed.ok());
  REQUIRE(claimed->size() == 1);
  REQUIRE(claimed->front().event.event_id == id);
  return claimed->front();
}

std::vector<ExpiredInstance> Release(TestInbox& t, TimePoint now, const std::string& self = "me") {
  auto released = t->ReleaseExpiredLeases(now, self, now - 24h);
  REQUIRE(released.ok());
  return *released;
}

std::vector<std::string> ClaimedIds(TestInbox& t, TimePoint now) {
  std::vector<std::string> ids;
  for (const ClaimedJob& job : Claim(t, now)) ids.push_back(job.event.event_id);
  return ids;
}

}  // namespace

TEST_CASE("liveness: a fresh heartbeat keeps its leases, an expired one's end once, no row waits") {
  TestInbox t;
  Beat(t, kA, kT0);  // alive until kT0 + 30 s unless it beats again
  Beat(t, kB, kT0);
  const ClaimedJob a = AcceptAndClaim(t, "a", kA + ":dispatcher");
  const ClaimedJob b = AcceptAndClaim(t, "b", kB + ":request:10.0.0.1:7");
  // An owner with no instance row: a hookbox from before instances.
  const ClaimedJob old = AcceptAndClaim(t, "old", "host-1:1234:dispatcher");
  Beat(t, kB, kT0 + 20s);  // B goes on beating; A stops

  // Within A's timeout nothing ends, however long ago the beat (B's and A's alike).
  CHECK(Release(t, kT0 + 29s).empty());
  CHECK(ClaimedIds(t, kT0 + 29s).empty());

  // Past it, A's lease ends at once (600 s before its lease_until); B's and the old one's
  // stand.
  auto released = Release(t, kT0 + 31s);
  REQUIRE(released.size() == 1);
  CHECK(released[0].id == kA);
  CHECK(released[0].host == "host-0123");
  CHECK(released[0].pid == 4242);
  CHECK(released[0].heartbeat_at == FormatTime(kT0));
  CHECK(released[0].jobs == 1);
  CHECK(Release(t, kT0 + 32s).empty());  // once: nothing live is left of A
  auto again = Claim(t, kT0 + 32s);
  REQUIRE(again.size() == 1);
  CHECK(again[0].event.event_id == "a");
  CHECK(again[0].event.attempt == 2);
  CHECK(t.Count("SELECT count(*) FROM attempts WHERE detail LIKE 'abandoned%'") == 1);
  // A's own finish has lost its lease; the takeover's holds.
  CHECK(t->FinishJob(a, Done(kT0 + 33s)).status().code() == Status::Code::kConflict);
  REQUIRE(t->FinishJob(again[0], Done(kT0 + 33s)).ok());

  // B, still beating, keeps its lease past A's release and past its own first timeout.
  Beat(t, kB, kT0 + 45s);
  CHECK(Release(t, kT0 + 70s).empty());
  CHECK(ClaimedIds(t, kT0 + 70s).empty());
  REQUIRE(t->FinishJob(b, Done(kT0 + 71s)).ok());

  // The owner without a row keeps its lease to its end: claimable then, not before.
  CHECK(Release(t, kT0 + 599s).empty());
  CHECK(ClaimedIds(t, kT0 + 599s).empty());
  CHECK(ClaimedIds(t, kT0 + 601s) == std::vector<std::string>{"old"});
  CHECK(t->FinishJob(old, Done(kT0 + 602s)).status().code() == Status::Code::kConflict);
}

TEST_CASE("liveness: no instance ends its own leases; a beat makes an expired one alive again") {
  TestInbox t;
  Beat(t, kA, kT0, 10s);
  AcceptAndClaim(t, "a", kA + ":dispatcher");
  // A's own release (it is `self`) leaves its leases, expired heartbeat or not.
  CHECK(Release(t, kT0 + 11s, kA).empty());
  CHECK(ClaimedIds(t, kT0 + 11s).empty());
  // A beats again before anyone else looked: alive, its lease kept.
  Beat(t, kA, kT0 + 12s, 10s);
  CHECK(Release(t, kT0 + 13s).empty());
  CHECK(ClaimedIds(t, kT0 + 13s).empty());
  // Each instance's own timeout counts: a longer one written by a later beat holds longer.
  Beat(t, kA, kT0 + 14s, 60s);
  CHECK(Release(t, kT0 + 70s).empty());
  CHECK(Release(t, kT0 + 75s).size() == 1);
}

TEST_CASE("liveness: a clean stop removes the instance and ends its leases, not a longer id's") {
  TestInbox t;
  Beat(t, kAShort, kT0);
  Beat(t, kA, kT0);  // kAShort is the start of kA's id
  AcceptAndClaim(t, "short", kAShort + ":dispatcher");
  AcceptAndClaim(t, "long", kA + ":dispatcher");
  auto ended = t->RemoveInstance(kAShort, kT0 + 1s);
  REQUIRE(ended.ok());
  CHECK(*ended == 1);
  CHECK(t.Count("SELECT count(*) FROM instances WHERE id = '" + kAShort + "'") == 0);
  CHECK(t.Count("SELECT count(*) FROM instances WHERE id = '" + kA + "'") == 1);
  CHECK(ClaimedIds(t, kT0 + 1s) == std::vector<std::string>{"short"});
  // Removed twice, or an id never seen: nothing to end.
  auto twice = t->RemoveInstance(kAShort, kT0 + 2s);
  REQUIRE(twice.ok());
  CHECK(*twice == 0);
  // The same on expiry: only kA's own lease, not a shorter id's.
  Beat(t, kAShort, kT0 + 100s);
  CHECK(Release(t, kT0 + 40s).size() == 1);
  CHECK(ClaimedIds(t, kT0 + 40s) == std::vector<std::string>{"long"});
}

TEST_CASE("liveness: a heartbeat upserts its row; expired rows go after forget_before") {
  TestInbox t;
  Beat(t, kA, kT0);
  Beat(t, kA, kT0 + 5s);
  CHECK(t.Count("SELECT count(*) FROM instances") == 1);
  // started_at is the first beat's, heartbeat_at the last's.
  CHECK(t.Count("SELECT count(*) FROM instances WHERE started_at < heartbeat_at") == 1);
  // Expired (at kT0 + 35 s), with no lease: kept until it expired before forget_before.
  auto kept = t->ReleaseExpiredLeases(kT0 + 1h, "me", kT0);
  REQUIRE(kept.ok());
  CHECK(kept->empty());
  CHECK(t.Count("SELECT count(*) FROM instances") == 1);
  // An instance never forgets itself.
  REQUIRE(t->ReleaseExpiredLeases(kT0 + 25h, kA, kT0 + 1h).ok());
  CHECK(t.Count("SELECT count(*) FROM instances") == 1);
  REQUIRE(t->ReleaseExpiredLeases(kT0 + 25h, "me", kT0 + 1h).ok());
  CHECK(t.Count("SELECT count(*) FROM instances") == 0);
}
