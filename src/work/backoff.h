// What becomes of a job after an attempt: done, retried later, or dead. Retries wait an
// exponential backoff with full jitter (a uniformly random delay between zero and
// min(max, base * 2^(n-1))), so a downstream that failed for everyone is not hit by every
// retry at once; a downstream's own Retry-After is honoured as a lower bound.
#pragma once

#include <chrono>
#include <random>

#include "config/config.h"
#include "handlers/handler.h"
#include "inbox/job_queue.h"

namespace hookbox {

// The ceiling of the jittered delay before try number `tries_used + 1`.
std::chrono::milliseconds BackoffCeiling(const RetryPolicy& policy, int tries_used);

// A handler that could not be started for want of the daemon's own resources
// (HandlerResult::infrastructure) is retried after a short delay drawn uniformly from
// [kInfraRetryMin, kInfraRetryMax], whatever its policy: the descriptors or processes it
// lacked are usually back within a second or two (a flood of connections closed, other
// attempts finished), and the jitter keeps the workers from all trying again at once.
inline constexpr std::chrono::milliseconds kInfraRetryMin{500};
inline constexpr std::chrono::milliseconds kInfraRetryMax{2000};

// ok -> done; permanent -> dead; failed/timeout -> dead once `tries_used` reaches
// max_attempts, else retry after the jittered backoff (at least result.retry_after). A
// failure with result.infrastructure is never dead: it retries after the short infra delay,
// and the outcome's refund_try gives the try back to the job's budget.
JobOutcome DecideNext(const HandlerResult& result, int tries_used, const RetryPolicy& policy,
                      TimePoint now, std::mt19937_64& rng);

}  // namespace hookbox
