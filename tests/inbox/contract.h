// What the files of the Inbox contract suite share (accept_test.cc, claim_finish_test.cc,
// order_test.cc, sync_test.cc, replicas_test.cc, retry_replay_test.cc, held_test.cc,
// reads_test.cc, purge_test.cc, open_test.cc, liveness_test.cc; one file per section of
// inbox.h). ctest runs the suite twice, on a fresh SQLite file per test (`inbox`) and, with
// HOOKBOX_TEST_BACKEND=postgres, on a fresh database of the throwaway PostgreSQL cluster per
// test (`inbox_postgres`); TestInbox (test_inbox.h) opens the one or the other. Raw-SQL checks
// go through TestInbox::Count, which asks the backend's own database as an operator would
// (sqlite3 / psql), in SQL both understand. Times are passed in explicitly from kT0, so lease
// expiry and backoff are tested without sleeping.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "inbox/inbox.h"
#include "tests/inbox/test_inbox.h"

namespace hookbox {

inline const TimePoint kT0 = TimePoint(std::chrono::seconds(1'800'000'000));

// An event as the receiver would make one: endpoint "ep", a job for each handler.
inline Event MakeEvent(const std::string& id, std::vector<std::string> handlers = {"h"},
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

inline Verdict Accept(TestInbox& t, const Event& e) {
  auto r = t->Accept(e);
  REQUIRE(r.ok());
  return r->verdict;
}

inline std::vector<ClaimedJob> Claim(TestInbox& t, TimePoint now, int max = 10,
                                     std::chrono::milliseconds lease = std::chrono::seconds(60)) {
  auto c = t->ClaimJobs("test-worker", max, now, lease);
  REQUIRE(c.ok());
  return *c;
}

inline JobOutcome Done(TimePoint at) {
  JobOutcome o;
  o.finished_at = at;
  return o;
}

// A failed attempt to be tried again at `next`: what a finish records when its sql handler's
// statements fail.
inline JobOutcome RetryAt(TimePoint next) {
  JobOutcome o;
  o.outcome = Outcome::kFailed;
  o.next = JobOutcome::Next::kRetry;
  o.next_attempt_at = next;
  return o;
}

}  // namespace hookbox
