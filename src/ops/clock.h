// Time, as the daemon sees it: a Clock interface so tests can move time (tolerance windows,
// purge schedules) without sleeping, and the one RFC 3339 format every stored time uses.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace hookbox {

using TimePoint = std::chrono::system_clock::time_point;

// Exists for tests: the real one reads the system clock.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
};

// "2026-11-29T16:05:34.123Z": fixed width, so stored times sort and compare as text.
std::string FormatTime(TimePoint t);
// RFC 3339 with any offset and 0-9 fractional digits -> microseconds since the epoch.
std::optional<int64_t> ParseRfc3339Micros(std::string_view text);

}  // namespace hookbox
