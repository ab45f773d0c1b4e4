// The one filter over inbox rows (README, "Finding events"): `inbox list`, the bulk verbs
// (`inbox retry --dead`, `inbox replay`) and the console's list page all select rows with
// an EventFilter, parsed here from the operator's options and turned into SQL by the
// backends with bound parameters only (backend.h, FilterCondition). The inbox layer owns it
// because only the inbox can evaluate it; the CLI and the console only hand it options.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/field_match.h"
#include "base/status.h"
#include "ops/clock.h"

namespace hookbox {

// Every part is optional ("" or empty = no condition); the parts are ANDed.
struct EventFilter {
  std::string endpoint;
  std::string status;     // an inbox row status: pending processing processed stale dead ignored
  std::string type_glob;  // event type; `*` any run of characters, `?` one character
  std::string handler;    // rows that have a job of this handler
  std::string since;      // received_at >= since (FormatTime text)
  std::string until;      // received_at < until (FormatTime text)
  std::vector<FieldMatch> where;  // `--where`s (base/field_match.h, as routes' `where:`)

  bool Empty() const {
    return endpoint.empty() && status.empty() && type_glob.empty() && handler.empty() &&
           since.empty() && until.empty() && where.empty();
  }
};

// One filter option as the operator gave it: the name without dashes ("endpoint", "status",
// "type", "handler", "since", "until", "where") and its value.
using FilterOption = std::pair<std::string, std::string>;

// Parses the options into a filter. Times (`since`, `until`) are RFC 3339, a date
// (YYYY-MM-DD, midnight UTC), or an age before `now` (`90m`, `2h`, `3d`). InvalidArgument,
// naming the bad part, for: an unknown option, a repeated one other than `where`, an unknown
// status, a malformed time or pointer, a `where` without `=`, an inverted time range.
// Every value must be UTF-8 without NUL (PostgreSQL's text takes nothing else, and the same
// filter must mean the same on both backends); `where` may be given any number of times.
StatusOr<EventFilter> ParseFilter(std::span<const FilterOption> options, TimePoint now);

}  // namespace hookbox
