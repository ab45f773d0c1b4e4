// The plain types the inbox's job roles share (job_queue.h, event_store.h for mode: sync):
// a job claimed under a lease, and how a job names its handler.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/job.h"
#include "ops/clock.h"

namespace hookbox {

// A job a worker holds a lease on: the stored event plus what identifies this attempt.
struct ClaimedJob {
  int64_t job_id = 0;
  int64_t inbox_id = 0;
  std::string handler;
  std::string lease_token;
  int budget_used = 0;     // tries since the job was created or re-armed, this one included
  HandlerEvent event;      // event.attempt: this try's number in the job's whole history
  int64_t attempt_id = 0;  // this try's attempts row, which its finish records
  // Claimed under a rate limit (ClaimLimits): when it was due, for the metric of the time
  // jobs waited on the limit. nullopt for the others.
  std::optional<TimePoint> rate_due_at;
  bool probe = false;  // the half-open circuit's one probe attempt
};

// How a job names the handler that runs it: the endpoint and the handler's name.
struct HandlerRef {
  std::string endpoint, handler;
};

}  // namespace hookbox
