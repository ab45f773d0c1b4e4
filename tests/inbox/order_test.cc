// The Inbox contract, per-resource order (job_queue.h, ClaimJobs): one job of a resource at a
// time, in received order, and a job waiting for its retry holding back the later jobs of
// its resource. Part of the storage contract suite, on SQLite and PostgreSQL
// (tests/inbox/contract.h).
#include <catch2/catch.hpp>

#include "inbox/inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

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
