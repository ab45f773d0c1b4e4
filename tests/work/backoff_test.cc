// Unit tests of retry scheduling: exponential ceilings, full jitter bounds, Retry-After,
// and when a job is dead.
#include "work/backoff.h"

#include <catch2/catch.hpp>

using namespace hookbox;
using namespace std::chrono_literals;

TEST_CASE("the backoff ceiling doubles from base up to max") {
  RetryPolicy p{12, 10s, 60s};
  CHECK(BackoffCeiling(p, 1) == 10s);
  CHECK(BackoffCeiling(p, 2) == 20s);
  CHECK(BackoffCeiling(p, 3) == 40s);
  CHECK(BackoffCeiling(p, 4) == 60s);
  CHECK(BackoffCeiling(p, 1000) == 60s);  // no overflow
}

TEST_CASE("full jitter: retries land anywhere between now and the ceiling") {
  RetryPolicy p{12, 1s, 1h};
  std::mt19937_64 rng(7);
  const TimePoint now{std::chrono::seconds(1000)};
  std::chrono::milliseconds lo = 1h, hi = 0ms;
  for (int i = 0; i < 2000; ++i) {
    JobOutcome o = DecideNext({Outcome::kFailed, "exit 1", {}}, 3, p, now, rng);
    REQUIRE(o.next == JobOutcome::Next::kRetry);
    auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(o.next_attempt_at - now);
    REQUIRE(delay >= 0ms);
    REQUIRE(delay <= 4s);
    lo = std::min(lo, delay);
    hi = std::max(hi, delay);
  }
  CHECK(lo < 500ms);  // spread over the whole window, not clustered at the top
  CHECK(hi > 3500ms);
}

TEST_CASE("Retry-After is a lower bound") {
  RetryPolicy p{12, 1s, 2s};
  std::mt19937_64 rng(1);
  const TimePoint now{};
  JobOutcome o = DecideNext({Outcome::kFailed, "HTTP 503", 30s}, 1, p, now, rng);
  CHECK(o.next_attempt_at - now >= 30s);
}

TEST_CASE("ok is done, permanent is dead, the last allowed try is dead") {
  RetryPolicy p{3, 1s, 2s};
  std::mt19937_64 rng(1);
  CHECK(DecideNext({Outcome::kOk, "", {}}, 1, p, {}, rng).next == JobOutcome::Next::kDone);
  CHECK(DecideNext({Outcome::kPermanent, "", {}}, 1, p, {}, rng).next == JobOutcome::Next::kDead);
  CHECK(DecideNext({Outcome::kTimeout, "", {}}, 2, p, {}, rng).next == JobOutcome::Next::kRetry);
  CHECK(DecideNext({Outcome::kTimeout, "", {}}, 3, p, {}, rng).next == JobOutcome::Next::kDead);
}
