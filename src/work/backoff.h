// What becomes of a job after an attempt: done, retried later, or dead. Retries wait an
// exponential backoff with full jitter (a uniformly random delay between zero and
// min(max, base * 2^(n-1))), so a downstream that failed for everyone is not hit by every
// retry at once; a downstream's own Retry-After is honoured as a lower bound.
#pragma once

#include <chrono>
#include <random>

#include "config/config.h"
#include "handlers/handler.h"
#include "inbox/inbox.h"

namespace hookbox {

// The ceiling of the jittered delay before try number `tries_used + 1`.
std::chrono::milliseconds BackoffCeiling(const RetryPolicy& policy, int tries_used);

// ok -> done; permanent -> dead; failed/timeout -> dead once `tries_used` reaches
// max_attempts, else retry after the jittered backoff (at least result.retry_after).
JobOutcome DecideNext(const HandlerResult& result, int tries_used, const RetryPolicy& policy,
                      TimePoint now, std::mt19937_64& rng);

}  // namespace hookbox
