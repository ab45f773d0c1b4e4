// Retry scheduling: exponential backoff with full jitter (see backoff.h).
#include "work/backoff.h"

#include <algorithm>

namespace hookbox {

std::chrono::milliseconds BackoffCeiling(const RetryPolicy& policy, int tries_used) {
  using std::chrono::milliseconds;
  milliseconds ceiling = policy.base;
  for (int i = 1; i < tries_used && ceiling < policy.max; ++i) ceiling *= 2;
  return std::min(ceiling, policy.max);
}

JobOutcome DecideNext(const HandlerResult& result, int tries_used, const RetryPolicy& policy,
                      TimePoint now, std::mt19937_64& rng) {
  JobOutcome o;
  o.outcome = result.outcome;
  o.detail = result.detail;
  o.finished_at = now;
  if (result.infrastructure && result.outcome != Outcome::kOk) {
    std::uniform_int_distribution<int64_t> delay(kInfraRetryMin.count(), kInfraRetryMax.count());
    o.next = JobOutcome::Next::kRetry;
    o.next_attempt_at = now + std::chrono::milliseconds(delay(rng));
    o.refund_try = true;
    return o;
  }
  switch (result.outcome) {
    case Outcome::kOk:
      o.next = JobOutcome::Next::kDone;
      return o;
    case Outcome::kPermanent:
      o.next = JobOutcome::Next::kDead;
      return o;
    case Outcome::kFailed:
    case Outcome::kTimeout:
      break;
  }
  if (tries_used >= policy.max_attempts) {
    o.next = JobOutcome::Next::kDead;
    return o;
  }
  const auto ceiling = BackoffCeiling(policy, tries_used);
  std::uniform_int_distribution<int64_t> jitter(0, ceiling.count());
  std::chrono::milliseconds delay(jitter(rng));
  if (result.retry_after) delay = std::max(delay, *result.retry_after);
  o.next = JobOutcome::Next::kRetry;
  o.next_attempt_at = now + delay;
  return o;
}

}  // namespace hookbox
