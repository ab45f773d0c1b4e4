// ops/clock.h's RFC 3339: the stored format read back, and what ParseRfc3339Micros takes and
// refuses from a producer's timestamp (offsets, 0-9 fractional digits, either case of T and Z).
#include "ops/clock.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

using namespace hookbox;

namespace {

// 2026-01-01T00:00:00Z in microseconds since the epoch.
constexpr int64_t kNewYear = int64_t{1767225600} * 1000000;

}  // namespace

TEST_CASE("FormatTime writes the one stored format, and ParseRfc3339Micros reads it back") {
  const TimePoint t = TimePoint(std::chrono::milliseconds(int64_t{1767225600123}));
  CHECK(FormatTime(t) == "2026-01-01T00:00:00.123Z");
  CHECK(ParseRfc3339Micros(FormatTime(t)) == kNewYear + 123000);
  // Before the epoch the milliseconds still count forward within their second.
  CHECK(FormatTime(TimePoint(std::chrono::milliseconds(-1))) == "1969-12-31T23:59:59.999Z");
}

TEST_CASE("ParseRfc3339Micros: offsets, fractions, and either case of T and Z") {
  CHECK(ParseRfc3339Micros("2026-01-01T00:00:00Z") == kNewYear);
  CHECK(ParseRfc3339Micros("2026-01-01t00:00:00z") == kNewYear);
  CHECK(ParseRfc3339Micros("2026-01-01 00:00:00Z") == kNewYear);
  CHECK(ParseRfc3339Micros("2026-01-01T01:30:00+01:30") == kNewYear);
  CHECK(ParseRfc3339Micros("2025-12-31T23:00:00-01:00") == kNewYear);
  CHECK(ParseRfc3339Micros("2026-01-01T00:00:00.5Z") == kNewYear + 500000);
  CHECK(ParseRfc3339Micros("2026-01-01T00:00:00.123456789Z") == kNewYear + 123456);
}

TEST_CASE("ParseRfc3339Micros refuses what is not a whole RFC 3339 time") {
  for (const std::string bad :
       {"", "2026-01-01", "2026-01-01T00:00:00",  // no offset
        "2026-1-01T00:00:00Z", "2026-0a-01T00:00:00Z", "+026-01-01T00:00:00Z",
        "2026-13-01T00:00:00Z", "2026-01-32T00:00:00Z", "2026-01-01T24:00:00Z",
        "2026-01-01T00:60:00Z", "2026-01-01X00:00:00Z", "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00.1234567890Z", "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+01",
        "2026-01-01T00:00:00Z ", "2026-01-01T00:00:00ZZ"}) {
    INFO(bad);
    CHECK(ParseRfc3339Micros(bad) == std::nullopt);
  }
}
