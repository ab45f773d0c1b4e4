// One attempt of one claimed job, start to end: find its handler, run it (or hand its
// TransactionalWork to the inbox transaction), decide what comes next (backoff.h), finish the job
// with the lease compare-and-swap, and log one line. Shared by the worker pool and by sync
// endpoints, whose requests run their event's jobs themselves.
#pragma once

#include "config/config.h"
#include "handlers/handler.h"
#include "inbox/job_queue.h"
#include "ops/clock.h"

namespace hookbox {

enum class AttemptMode {
  kPool,  // failures retry with backoff until max_attempts, then the job is dead
  kSync,  // failures release the job at once for the producer's own retry
};

// How long a claim leases its jobs, the dispatcher's and a sync request's alike: the longest
// handler timeout plus a margin for the finish to commit.
std::chrono::milliseconds LeaseFor(const HandlerSet& handlers);

// mode: sync. The lease a request renews as each job after the first starts (its claim's
// lease, LeaseFor(handlers), was taken for one run): that job's handler's timeout plus the
// margin; a job whose handler is gone from the config (`handler` null) gets the margin
// alone, since it fails at once.
std::chrono::milliseconds LeaseFor(const Handler* handler);

// The outcome recorded for the job, or why nothing was recorded (Conflict "lease lost":
// another worker took the job over and its result stands; Unavailable: storage; NotFound:
// the handler is not configured, and the job is now held, work/held.h).
StatusOr<JobOutcome> RunAttempt(JobQueue& jobs, const ClaimedJob& job, const Config& config,
                                const HandlerSet& handlers, const Clock& clock, AttemptMode mode);

// The pieces of RunAttempt, for the dispatcher, which runs many attempts at once and
// finishes them in batches (Inbox::FinishJobs).
//
// What the handler's result means for the job: the finish to record (`work`: the handler's
// TransactionalWork, which runs in the finishing transaction). `request.job` is &job.
FinishRequest Conclude(const ClaimedJob& job, const HandlerResult& result, const Handler* handler,
                       const Config& config, const Clock& clock, AttemptMode mode);
// Logs the attempt's line and counts it in the metrics, whether or not `recorded` (what the
// inbox said to the finish) is ok; returns the outcome that stands, or why none was recorded.
StatusOr<JobOutcome> Report(const FinishRequest& finish, const StatusOr<Outcome>& recorded,
                            double seconds, AttemptMode mode);

}  // namespace hookbox
