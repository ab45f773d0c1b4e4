// The backend-independent half of the inbox (see backend.h).
#include "inbox/backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "base/utf8.h"
#include "inbox/filter.h"

namespace hookbox {

int64_t LatestMigration(const std::vector<Migration>& migrations) {
  int64_t latest = 0;
  for (const Migration& m : migrations) latest = std::max<int64_t>(latest, m.version);
  return latest;
}

namespace {

std::string_view ChangeName(std::string_view name) {
  const size_t under = name.find('_');
  return under == std::string_view::npos ? name : name.substr(under + 1);
}

const Migration* MigrationNamed(std::string_view name, const std::vector<Migration>& migrations) {
  for (const Migration& m : migrations) {
    if (ChangeName(m.name) == ChangeName(name)) return &m;
  }
  return nullptr;
}

}  // namespace

std::vector<std::pair<RecordedMigration, const Migration*>> Renumbered(
    std::vector<RecordedMigration> recorded, const std::vector<Migration>& migrations) {
  std::sort(
      recorded.begin(), recorded.end(),
      [](const RecordedMigration& a, const RecordedMigration& b) { return a.version > b.version; });
  std::vector<std::pair<RecordedMigration, const Migration*>> out;
  for (RecordedMigration& r : recorded) {
    const Migration* m = MigrationNamed(r.name, migrations);
    if (m && (m->version != r.version || m->name != r.name)) out.emplace_back(std::move(r), m);
  }
  return out;
}

int64_t SchemaVersionOf(const std::vector<RecordedMigration>& recorded,
                        const std::vector<Migration>& migrations) {
  int64_t version = 0;
  for (const RecordedMigration& r : recorded) {
    const Migration* m = MigrationNamed(r.name, migrations);
    version = std::max<int64_t>(version, m ? m->version : r.version);
  }
  return version;
}

bool MigrationDue(const std::vector<RecordedMigration>& recorded,
                  const std::vector<Migration>& migrations) {
  return SchemaVersionOf(recorded, migrations) < LatestMigration(migrations) ||
         !Renumbered(recorded, migrations).empty();
}

Status CheckVersion(const std::string& where, int64_t version,
                    const std::vector<Migration>& migrations) {
  if (version >= LatestMigration(migrations)) return Status::Ok();
  return Status::Unavailable("the database's schema is behind this hookbox",
                             where + " has migration " + std::to_string(version) +
                                 ", this hookbox needs " +
                                 std::to_string(LatestMigration(migrations)) +
                                 ": run `hookbox migrate` (or start `serve`, which migrates)");
}

std::string NewLeaseToken() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[33];
  snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
           static_cast<unsigned long long>(rng()));
  return buf;
}

Status LeaseLost(const ClaimedJob& job) {
  return Status::Conflict(Status::ConflictKind::kLeaseLost, "lease lost",
                          "job " + std::to_string(job.job_id));
}

Status ClearRefused(const std::string& endpoint, const std::string& event_id) {
  return Status::Conflict(
      Status::ConflictKind::kEventBusy, "event is being processed",
      endpoint + " " + event_id + ": a job of it is running; clear it once the attempt has ended");
}

const char* JobStatusFor(JobOutcome::Next next) {
  switch (next) {
    case JobOutcome::Next::kDone:
      return "done";
    case JobOutcome::Next::kRetry:
      return "pending";
    case JobOutcome::Next::kDead:
      return "dead";
  }
  return "pending";
}

JobOutcome WorkFailedOutcome(const JobOutcome& outcome, const JobOutcome* work_failed,
                             std::string_view kind, const Status& error) {
  JobOutcome failed = work_failed ? *work_failed : outcome;
  failed.outcome = Outcome::kFailed;
  failed.detail = std::string(kind) + ": " + error.ToString();
  return failed;
}

std::string StorableText(std::string_view handler_output) { return ToValidUtf8(handler_output); }

std::array<PurgeTarget, 4> PurgeTargets(const PurgeRequest& r, PurgeCounts* counts) {
  return {{{"processed", r.processed_before, &counts->processed},
           {"stale", r.processed_before, &counts->stale},
           {"ignored", r.processed_before, &counts->ignored},
           {"dead", r.dead_before, &counts->dead}}};
}

std::string PurgeRowCondition(char mark, const char* time_cast, int first) {
  const std::string status = mark + std::to_string(first);
  const std::string before = mark + std::to_string(first + 1);
  // Unfinished is every job status but done and dead, so that a status added later (a job
  // waiting for an operator, say) keeps its row too.
  return "status = " + status + " AND received_at < " + before + time_cast +
         " AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.inbox_id = inbox.id"
         " AND jobs.status NOT IN ('done', 'dead'))";
}

const char* QueueCountSql(bool count_done) {
  return count_done ? "SELECT status, count(*) FROM jobs GROUP BY status"
                    : "SELECT status, count(*) FROM jobs"
                      " WHERE status IN ('pending', 'processing', 'dead') GROUP BY status";
}

namespace {

// The type glob as a pattern of the dialect's own operator, every character but `*` and `?`
// literal: SQLite's GLOB is case-sensitive and knows `[...]`, so `[` becomes the class
// `[[]`; PostgreSQL's LIKE is case-sensitive and knows `%`, `_` and its escape `\`.
std::string TypePattern(const std::string& glob, SqlDialect dialect) {
  std::string out;
  for (char c : glob) {
    if (dialect == SqlDialect::kSqlite) {
      out += c == '[' ? std::string("[[]") : std::string(1, c);
    } else if (c == '*') {
      out += '%';
    } else if (c == '?') {
      out += '_';
    } else {
      if (c == '%' || c == '_' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string FilterCondition(const EventFilter& f, SqlDialect dialect,
                            std::vector<SqlValue>* params) {
  const bool pg = dialect == SqlDialect::kPostgres;
  const char* time_cast = pg ? "::timestamptz" : "";
  std::string where;
  auto param = [&](SqlValue v) {
    params->push_back(std::move(v));
    return std::string(1, pg ? '$' : '?') + std::to_string(params->size());
  };
  auto add = [&](const std::string& condition) {
    where += where.empty() ? "" : " AND ";
    where += condition;
  };
  if (!f.endpoint.empty()) add("endpoint = " + param(f.endpoint));
  if (!f.status.empty()) add("status = " + param(f.status));
  if (!f.since.empty()) add("received_at >= " + param(f.since) + time_cast);
  if (!f.until.empty()) add("received_at < " + param(f.until) + time_cast);
  if (!f.type_glob.empty()) {
    if (f.type_glob.find_first_of("*?") == std::string::npos) {
      add("event_type = " + param(f.type_glob));
    } else if (pg) {
      add("event_type LIKE " + param(TypePattern(f.type_glob, dialect)) + " ESCAPE '\\'");
    } else {
      add("event_type GLOB " + param(TypePattern(f.type_glob, dialect)));
    }
  }
  if (!f.handler.empty()) {
    add("EXISTS (SELECT 1 FROM jobs WHERE jobs.inbox_id = inbox.id AND jobs.handler = " +
        param(f.handler) + ")");
  }
  for (const FieldMatch& m : f.where) {
    if (m.kind == FieldMatch::Kind::kJsonPointer) {
      add("hookbox_pointer(inbox.body, " + param(m.field) + ") = " + param(m.value));
      continue;
    }
    // The body between `&`s, so that a pair matches only as a whole field; the pattern is
    // ASCII (FormPairSpellings, made at parse, encodes every other byte), so text and bytes
    // agree.
    std::string any;
    for (const std::string& pair : m.spellings) {
      any += any.empty() ? "(" : " OR ";
      any += pg ? "position(convert_to(" + param("&" + pair + "&") +
                      ", 'UTF8') IN '&'::bytea || inbox.body || '&'::bytea) > 0"
                : "instr(CAST(X'26' || inbox.body || X'26' AS BLOB), CAST(" +
                      param("&" + pair + "&") + " AS BLOB)) > 0";
    }
    add(any + ")");
  }
  return where;
}

std::string ListQueryFrom(const ListFilter& f, SqlDialect dialect, std::vector<SqlValue>* params) {
  const bool pg = dialect == SqlDialect::kPostgres;
  auto param = [&](SqlValue v) {
    params->push_back(std::move(v));
    return std::string(1, pg ? '$' : '?') + std::to_string(params->size());
  };
  std::string where = FilterCondition(f.filter, dialect, params);
  auto add = [&](const std::string& condition) {
    where += where.empty() ? "" : " AND ";
    where += condition;
  };
  if (!f.event_id.empty()) add("event_id = " + param(f.event_id));
  if (f.before_id != 0) {
    const std::string at = param(f.before_received_at) + (pg ? "::timestamptz" : "");
    add("(received_at, id) < (" + at + ", " + param(f.before_id) + ")");
  }
  return " FROM inbox" + (where.empty() ? "" : " WHERE " + where);
}

std::string ListQueryTail(const ListFilter& f, SqlDialect dialect, std::vector<SqlValue>* params) {
  std::string tail = ListQueryFrom(f, dialect, params);
  params->emplace_back(int64_t{f.limit});
  return tail + " ORDER BY received_at DESC, id DESC LIMIT " +
         (dialect == SqlDialect::kPostgres ? '$' : '?') + std::to_string(params->size());
}

const char* BulkVerbName(BulkVerb verb) {
  switch (verb) {
    case BulkVerb::kReplay:
      return "replay";
    case BulkVerb::kRetryWaiting:
      return "retry_waiting";
    case BulkVerb::kRetryDead:
      break;
  }
  return "retry";
}

std::optional<double> ParseBulkRate(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash > 20) return std::nullopt;
  const std::string number(text.substr(0, slash));
  const std::string_view unit = text.substr(slash + 1);
  char* end = nullptr;
  const double n = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !(n > 0) || n > 1e9) return std::nullopt;
  if (unit == "s") return n;
  if (unit == "min") return n / 60;
  return std::nullopt;
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kAccepted:
      return "accepted";
    case Verdict::kDuplicate:
      return "duplicate";
    case Verdict::kStale:
      return "stale";
    case Verdict::kIgnored:
      return "ignored";
  }
  return "?";
}

std::string HeldReason(const std::string& handler) {
  return "held: handler " + handler +
         " is not configured; it runs when a handler of that name is configured again"
         " (or see hookbox inbox reassign / drop)";
}

}  // namespace hookbox
