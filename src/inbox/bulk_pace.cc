// A bulk verb's pace: see bulk_pace.h.
#include "inbox/bulk_pace.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/status_macros.h"

namespace hookbox {

StatusOr<std::vector<PlanHandler>> HandlersOfPlan(HandlerStates& states, const BulkPlan& plan,
                                                  TimePoint now) {
  ASSIGN_OR_RETURN(std::vector<HandlerStatus> all, states.Handlers(now, /*count_jobs=*/false));
  std::map<std::string, const HandlerState*> stored;
  for (const HandlerStatus& h : all) stored[h.state.endpoint + "/" + h.state.handler] = &h.state;
  std::vector<PlanHandler> out;
  for (const auto& [name, jobs] : plan.jobs_by_handler) {
    PlanHandler p{.name = name, .jobs = jobs, .state = {}};
    if (auto found = stored.find(name); found != stored.end()) p.state = *found->second;
    out.push_back(std::move(p));
  }
  return out;
}

int64_t DrainSeconds(int64_t jobs, double rate) {
  if (rate <= 0 || jobs <= 0) return 0;
  return std::max<int64_t>(1,
                           static_cast<int64_t>(std::ceil(static_cast<double>(jobs - 1) / rate)));
}

StatusOr<int64_t> ActBulk(InboxAdmin& admin, const BulkRequest& request) {
  switch (request.verb) {
    case BulkVerb::kReplay:
      return admin.Replay(request);
    case BulkVerb::kRetryWaiting:
      return admin.RetryWaiting(request);
    case BulkVerb::kRetryDead:
      break;
  }
  return admin.RetryDead(request);
}

const PlanHandler* PausedUnderRate(const std::vector<PlanHandler>& handlers, double rate) {
  if (rate <= 0) return nullptr;
  for (const PlanHandler& h : handlers) {
    if (h.state.paused) return &h;
  }
  return nullptr;
}

}  // namespace hookbox
