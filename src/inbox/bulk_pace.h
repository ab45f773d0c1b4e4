// The pace of a bulk verb (`inbox retry --dead|--waiting`, `inbox replay`, the console's bulk
// page): the state of each handler a plan acts on, how long a --rate spread takes to come due,
// and the one refusal both front ends give. A --rate spread starts when the verb acts; over a
// paused handler its due times run out while the handler waits, and on resume every job would
// run at once, so such a verb is refused (README, "Bulk retry and replay"). Policy over the
// inbox's roles (HandlerStates, InboxAdmin): no SQL here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "inbox/handler_states.h"
#include "inbox/inbox_admin.h"
#include "ops/clock.h"

namespace hookbox {

// A handler a plan acts on: "endpoint/handler", its jobs in the plan and its stored state (a
// running one when it has no state row).
struct PlanHandler {
  std::string name;
  int64_t jobs = 0;
  HandlerState state;
};

// The handlers of plan.jobs_by_handler, in its order, with their states.
StatusOr<std::vector<PlanHandler>> HandlersOfPlan(HandlerStates& states, const BulkPlan& plan,
                                                  TimePoint now);

// About how many seconds a spread of `jobs` jobs at `rate` a second takes to come due: the
// i-th is due at i / rate (BulkRequest), so (jobs - 1) / rate rounded up, and at least 1.
// 0 without a rate or without jobs.
int64_t DrainSeconds(int64_t jobs, double rate);

// The verb's act: Inbox::RetryDead, RetryWaiting or Replay. Returns the jobs re-armed.
StatusOr<int64_t> ActBulk(InboxAdmin& admin, const BulkRequest& request);

// The first paused handler of `handlers` when `rate` > 0: a spread that would not hold its
// pace. nullptr when there is none, or no rate.
const PlanHandler* PausedUnderRate(const std::vector<PlanHandler>& handlers, double rate);

}  // namespace hookbox
