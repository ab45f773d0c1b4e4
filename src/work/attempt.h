// One attempt of one claimed job, start to end: find its handler, run it (or hand its SQL to
// the inbox transaction), decide what comes next (backoff.h), finish the job with the lease
// compare-and-swap, and log one line. Shared by the worker pool and by sync endpoints, whose
// requests run their event's jobs themselves.
#pragma once

#include "config/config.h"
#include "handlers/handler.h"
#include "inbox/inbox.h"
#include "ops/clock.h"

namespace hookbox {

enum class AttemptMode {
  kPool,  // failures retry with backoff until max_attempts, then the job is dead
  kSync,  // failures release the job at once for the producer's own retry
};

// The outcome recorded for the job, or why nothing was recorded (Conflict "lease lost":
// another worker took the job over and its result stands; Unavailable: storage).
StatusOr<JobOutcome> RunAttempt(Inbox& inbox, const ClaimedJob& job, const Config& config,
                                const HandlerSet& handlers, const Clock& clock, AttemptMode mode);

}  // namespace hookbox
