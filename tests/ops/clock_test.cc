// ops/clock.h's RFC 3339: the stored format read back, and what ParseRfc3339Micros takes and
// refuses from a producer's timestamp (offsets, 0-9 fractional digits, either case of T and Z).
#include "ops/clock.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <random>
#include <string>

using namespace hookbox;

namespace {

// 2026-01-01T00:00:00Z in microseconds since the epoch.
constexpr int64_t kNewYear = int64_t{1767225600} * 1000000;

// The format as the C library writes it (gmtime_r and snprintf): what FormatTime wrote before
// it wrote the digits itself.
std::string LibcFormat(int64_t ms) {
  time_t secs = static_cast<time_t>(ms / 1000);
  int frac = static_cast<int>(ms % 1000);
  if (frac < 0) {
    frac += 1000;
    --secs;
  }
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[64];
  snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

}  // namespace

TEST_CASE("FormatTime writes what gmtime_r and snprintf write") {
  std::mt19937_64 rng(42);
  // About 1684 to 2255 in milliseconds since the epoch: within what a TimePoint (nanoseconds
  // in 64 bits) holds.
  constexpr int64_t kFirst = -9000000000000, kLast = 9000000000000;
  std::uniform_int_distribution<int64_t> any(kFirst, kLast);
  for (int64_t ms :
       {kFirst, kLast, int64_t{0}, int64_t{-1}, int64_t{951782400000}, int64_t{4107542399999}}) {
    CHECK(FormatTime(TimePoint(std::chrono::milliseconds(ms))) == LibcFormat(ms));
  }
  for (int i = 0; i < 100000; ++i) {
    const int64_t ms = any(rng);
    REQUIRE(FormatTime(TimePoint(std::chrono::milliseconds(ms))) == LibcFormat(ms));
  }
}

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
