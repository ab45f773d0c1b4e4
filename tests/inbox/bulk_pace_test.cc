// A bulk verb's pace (inbox/bulk_pace.h): the handlers of a plan with their stored states, the
// drain time of a --rate spread, and the refusal of a spread over a paused handler (ActBulk
// is the Inbox's verbs, tested in retry_replay_test.cc and through the CLI and console). The states
// are read from a real inbox (SQLite here, the throwaway PostgreSQL cluster as
// `inbox_postgres`); the arithmetic needs none.
#include "inbox/bulk_pace.h"

#include <catch2/catch.hpp>

#include "tests/inbox/test_inbox.h"

namespace {

using namespace hookbox;

const TimePoint kT0 = TimePoint(std::chrono::seconds(1'800'000'000));

TEST_CASE("bulk pace: a plan's handlers carry their stored state, paused with its reason") {
  TestInbox t;
  REQUIRE(t->SetPaused({{"ep", "a"}}, true, "downstream down", kT0).ok());
  BulkPlan plan;
  plan.jobs = 5;
  plan.jobs_by_handler = {{"ep/a", 3}, {"ep/b", 2}};
  auto handlers = HandlersOfPlan(*t.inbox, plan, kT0);
  REQUIRE(handlers.ok());
  REQUIRE(handlers->size() == 2);
  CHECK((*handlers)[0].name == "ep/a");
  CHECK((*handlers)[0].jobs == 3);
  CHECK(std::string(HandlerStateName((*handlers)[0].state)) == "paused");
  CHECK((*handlers)[0].state.paused_reason == "downstream down");
  CHECK((*handlers)[1].name == "ep/b");  // no state row: running
  CHECK(std::string(HandlerStateName((*handlers)[1].state)) == "running");

  // A rate over the paused one is refused; without a rate, or once resumed, nothing is.
  const PlanHandler* paused = PausedUnderRate(*handlers, 10);
  REQUIRE(paused != nullptr);
  CHECK(paused->name == "ep/a");
  CHECK(PausedUnderRate(*handlers, 0) == nullptr);
  REQUIRE(t->SetPaused({{"ep", "a"}}, false, "", kT0).ok());
  auto resumed = HandlersOfPlan(*t.inbox, plan, kT0);
  REQUIRE(resumed.ok());
  CHECK(PausedUnderRate(*resumed, 10) == nullptr);
}

TEST_CASE("bulk pace: the drain time is when the last job of the spread comes due") {
  CHECK(DrainSeconds(30, 10) == 3);  // the 30th at 29/10 s
  CHECK(DrainSeconds(31, 10) == 3);
  CHECK(DrainSeconds(32, 10) == 4);
  CHECK(DrainSeconds(1, 10) == 1);                 // due at once: "about 1 s", never "about 0 s"
  CHECK(DrainSeconds(120, 1.0 / 60) == 119 * 60);  // 1/min
  CHECK(DrainSeconds(0, 10) == 0);
  CHECK(DrainSeconds(50, 0) == 0);  // no rate: all due now
}

}  // namespace
