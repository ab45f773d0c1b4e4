// Counts of the last hour, by name, for the console's "deliveries in the last hour by
// outcome": sixty one-minute buckets in a ring, so adding is O(1) and memory is bounded
// whatever the traffic. Counted since the process started (a restart begins at zero), and
// to the minute: the window is the current minute and the 59 before it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace hookbox {

class RecentCounts {
 public:
  static constexpr int kMinutes = 60;

  void Add(std::string_view name, std::chrono::system_clock::time_point now) {
    const int64_t minute = MinuteOf(now);
    std::lock_guard lock(mu_);
    Bucket& b = buckets_[static_cast<size_t>(minute % kMinutes)];
    if (b.minute != minute) {
      b.minute = minute;
      b.counts.clear();
    }
    auto it = b.counts.find(name);
    if (it == b.counts.end()) it = b.counts.emplace(std::string(name), 0).first;
    ++it->second;
  }

  // The sums over the window that ends at `now`.
  std::map<std::string, int64_t> LastHour(std::chrono::system_clock::time_point now) const {
    const int64_t minute = MinuteOf(now);
    std::map<std::string, int64_t> sums;
    std::lock_guard lock(mu_);
    for (const Bucket& b : buckets_) {
      if (b.minute > minute - kMinutes && b.minute <= minute) {
        for (const auto& [name, n] : b.counts) sums[name] += n;
      }
    }
    return sums;
  }

 private:
  struct Bucket {
    int64_t minute = -1;
    std::map<std::string, int64_t, std::less<>> counts;
  };
  static int64_t MinuteOf(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::minutes>(t.time_since_epoch()).count();
  }

  mutable std::mutex mu_;
  std::array<Bucket, kMinutes> buckets_;
};

}  // namespace hookbox
