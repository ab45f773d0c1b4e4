// RecentCounts: the last hour's counts by name, to the minute, in bounded memory.
#include "ops/recent_counts.h"

#include <catch2/catch.hpp>

using hookbox::RecentCounts;
using namespace std::chrono_literals;

TEST_CASE("RecentCounts sums the last sixty minutes and forgets what is older") {
  RecentCounts c;
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::hours(480000));
  c.Add("accepted", t0);
  c.Add("accepted", t0 + 30s);
  c.Add("duplicate", t0 + 10min);
  c.Add("accepted", t0 + 59min);
  auto now = c.LastHour(t0 + 59min);
  CHECK(now["accepted"] == 3);
  CHECK(now["duplicate"] == 1);
  // An hour after t0, t0's minute has left the window; the rest is still in it.
  auto later = c.LastHour(t0 + 60min);
  CHECK(later["accepted"] == 1);
  CHECK(later["duplicate"] == 1);
  // A bucket is reused for a new minute: its old counts do not add to the new ones.
  c.Add("stale", t0 + 120min);
  auto reused = c.LastHour(t0 + 120min);
  CHECK(reused.size() == 1);
  CHECK(reused["stale"] == 1);
  CHECK(c.LastHour(t0 + 300min).empty());
}
