// TEMPORARY, for the `bulk` branch only: a minimal ParseFilter and FilterCondition so that
// the bulk verbs (RetryDead, Replay, PlanBulk) link and can be tested before the filter's own
// change (src/inbox/filter.cc, FilterCondition in backend.cc) merges. It handles endpoint,
// status, type, handler, since and until, and refuses `where`. Delete this file at the merge.
#include <map>
#include <set>

#include "inbox/backend.h"
#include "inbox/filter.h"

namespace hookbox {
namespace {

std::optional<std::string> TimeBound(const std::string& text, TimePoint now) {
  if (text.size() >= 2) {
    const char unit = text.back();
    const std::string digits = text.substr(0, text.size() - 1);
    if (digits.find_first_not_of("0123456789") == std::string::npos && digits.size() < 9) {
      const std::map<char, int64_t> seconds = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
      if (auto it = seconds.find(unit); it != seconds.end()) {
        return FormatTime(now - std::chrono::seconds(std::stoll(digits) * it->second));
      }
    }
  }
  const std::string rfc = text.size() == 10 ? text + "T00:00:00Z" : text;
  if (auto micros = ParseRfc3339Micros(rfc)) {
    return FormatTime(TimePoint(std::chrono::microseconds(*micros)));
  }
  return std::nullopt;
}

}  // namespace

StatusOr<EventFilter> ParseFilter(std::span<const FilterOption> options, TimePoint now) {
  static const std::set<std::string> kStatuses = {"pending", "processing", "processed",
                                                  "stale",   "dead",       "ignored"};
  EventFilter f;
  std::set<std::string> seen;
  for (const auto& [name, value] : options) {
    if (name != "where" && !seen.insert(name).second) {
      return Status::InvalidArgument("option given twice", "--" + name);
    }
    if (name == "endpoint") {
      f.endpoint = value;
    } else if (name == "status") {
      if (!kStatuses.contains(value)) return Status::InvalidArgument("unknown status", value);
      f.status = value;
    } else if (name == "type") {
      f.type_glob = value;
    } else if (name == "handler") {
      f.handler = value;
    } else if (name == "since" || name == "until") {
      auto t = TimeBound(value, now);
      if (!t) return Status::InvalidArgument("bad time", "--" + name + " " + value);
      (name == "since" ? f.since : f.until) = *t;
    } else {
      return Status::InvalidArgument("unknown filter option", "--" + name);
    }
  }
  if (!f.since.empty() && !f.until.empty() && f.until <= f.since) {
    return Status::InvalidArgument("inverted time range", "--until is not after --since");
  }
  return f;
}

std::string FilterCondition(const EventFilter& f, SqlDialect dialect,
                            std::vector<SqlValue>* params) {
  const char mark = dialect == SqlDialect::kSqlite ? '?' : '$';
  const char* time_cast = dialect == SqlDialect::kSqlite ? "" : "::timestamptz";
  std::string where;
  auto param = [&](SqlValue v) {
    params->push_back(std::move(v));
    return std::string(1, mark) + std::to_string(params->size());
  };
  auto add = [&](const std::string& condition) {
    if (!where.empty()) where += " AND ";
    where += condition;
  };
  if (!f.endpoint.empty()) add("endpoint = " + param(f.endpoint));
  if (!f.status.empty()) add("status = " + param(f.status));
  if (!f.type_glob.empty()) {
    if (mark == '?') {
      add("event_type GLOB " + param(f.type_glob));
    } else {
      std::string like;
      for (char c : f.type_glob) {
        if (c == '*') {
          like += '%';
        } else if (c == '?') {
          like += '_';
        } else {
          if (c == '%' || c == '_' || c == '\\') like += '\\';
          like += c;
        }
      }
      add("event_type LIKE " + param(like) + " ESCAPE '\\'");
    }
  }
  if (!f.handler.empty()) {
    add("EXISTS (SELECT 1 FROM jobs WHERE jobs.inbox_id = inbox.id AND jobs.handler = " +
        param(f.handler) + ")");
  }
  if (!f.since.empty()) add("received_at >= " + param(f.since) + time_cast);
  if (!f.until.empty()) add("received_at < " + param(f.until) + time_cast);
  return where;
}

}  // namespace hookbox
