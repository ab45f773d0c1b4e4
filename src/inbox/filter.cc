// The one filter over inbox rows (see filter.h): the operator's options parsed and checked
// once, here, so that `inbox list`, the bulk verbs and the console refuse the same mistakes
// with the same words. A `--where` is read by base/field_match.h, as a route's `where:` is.
#include "inbox/filter.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>

#include "base/status_macros.h"
#include "base/utf8.h"

namespace hookbox {
namespace {

constexpr std::array<std::string_view, 6> kStatuses = {"pending", "processing", "processed",
                                                       "stale",   "dead",       "ignored"};

Status Bad(const std::string& what, const std::string& detail) {
  return Status::InvalidArgument("bad filter: " + what, detail);
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// An age before now: a whole number and one of s, m, h, d ("90m", "2h", "3d").
std::optional<TimePoint> Age(std::string_view text, TimePoint now) {
  if (text.size() < 2 || text.size() > 12) return std::nullopt;
  const std::string_view digits = text.substr(0, text.size() - 1);
  if (!AllDigits(digits)) return std::nullopt;
  int64_t n = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), n);
  int64_t seconds_per = 0;
  switch (text.back()) {
    case 's':
      seconds_per = 1;
      break;
    case 'm':
      seconds_per = 60;
      break;
    case 'h':
      seconds_per = 3600;
      break;
    case 'd':
      seconds_per = 86400;
      break;
    default:
      return std::nullopt;
  }
  // At most 10^11 days (12 characters), which fits in seconds but not in the clock's
  // nanoseconds: an age reaching back before 1970 is refused (as not a time).
  const auto since_epoch = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch());
  if (n > since_epoch.count() / seconds_per) return std::nullopt;
  return now - std::chrono::seconds(n * seconds_per);
}

// `--since` / `--until` as stored text (FormatTime): an RFC 3339 time, a date (midnight
// UTC) or an age before `now`.
StatusOr<std::string> FilterTime(const std::string& option, const std::string& text,
                                 TimePoint now) {
  if (auto t = Age(text, now)) return FormatTime(*t);
  std::string rfc3339 = text;
  if (text.size() == 10 && text[4] == '-' && text[7] == '-') rfc3339 += "T00:00:00Z";
  if (auto micros = ParseRfc3339Micros(rfc3339)) {
    return FormatTime(TimePoint(std::chrono::microseconds(*micros)));
  }
  return Bad("--" + option + " " + text,
             "not a time: give an RFC 3339 time (2026-12-01T08:00:00Z), a date (2026-12-01) or "
             "an age (90m, 2h, 3d)");
}

}  // namespace

StatusOr<EventFilter> ParseFilter(std::span<const FilterOption> options, TimePoint now) {
  EventFilter f;
  std::set<std::string> given;
  for (const auto& [name, value] : options) {
    if (!IsTextWithoutNul(value)) {
      return Bad("--" + name, "the value is not UTF-8 text (or holds a NUL byte)");
    }
    if (name != "where" && !given.insert(name).second) {
      return Bad("--" + name, "given twice; only --where may be repeated");
    }
    if (name == "endpoint") {
      f.endpoint = value;
    } else if (name == "status") {
      if (!value.empty() &&
          std::find(kStatuses.begin(), kStatuses.end(), value) == kStatuses.end()) {
        return Bad("--status " + value,
                   "unknown status: one of pending, processing, processed, stale, dead, ignored");
      }
      f.status = value;
    } else if (name == "type") {
      f.type_glob = value;
    } else if (name == "handler") {
      f.handler = value;
    } else if (name == "since" || name == "until") {
      if (value.empty()) continue;
      ASSIGN_OR_RETURN(auto t, FilterTime(name, value, now));
      (name == "since" ? f.since : f.until) = t;
    } else if (name == "where") {
      auto m = ParseFieldMatch(value);
      if (!m.ok()) return Bad("--where " + value, m.status().what());
      f.where.push_back(*std::move(m));
    } else {
      return Bad("--" + name,
                 "unknown option: the filter takes --endpoint, --status, --type, --handler, "
                 "--since, --until and --where");
    }
  }
  // Stored times are fixed-width text, so they compare as text.
  if (!f.since.empty() && !f.until.empty() && f.since >= f.until) {
    return Bad("--since " + f.since + " --until " + f.until,
               "the time range is empty: --since must be before --until");
  }
  return f;
}

}  // namespace hookbox
