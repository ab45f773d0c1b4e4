// The PostgreSQL inbox (see postgres_inbox.h): migrations under an advisory lock, the accept
// transaction (dedupe, sequence gate, jobs), job claiming across replicas, sync claims,
// finishing with the lease compare-and-swap, and the operator's reads.
//
// Locks, in the one order every transaction takes them (so replicas never deadlock on each
// other): a resource's advisory lock, then jobs rows, then inbox rows in ascending id order.
// (A claim takes the advisory lock after its jobs rows, but only with a try-lock: it never
// waits for it.)
// - accept: the resource's accept lock (so inbox ids of one resource ascend in commit order,
//   which is the order its jobs run in), with dedupe: [id, body] the body's lock (each
//   transaction takes at most one resource lock and then at most one body lock, so the two
//   never wait on each other in a cycle), the unique index on (endpoint, event_id) (a
//   concurrent delivery of the same event waits for the first to commit or roll back), the
//   sequences row (upsert with a conditional update: the gate only moves forward).
// - claim: FOR UPDATE SKIP LOCKED on due jobs, then for a job with a resource a try-lock on
//   the resource's claim lock and a re-check, under it, that the job still heads its
//   resource with no live lease on another of its jobs (a fresh snapshot: a claim another
//   replica committed a moment ago is seen).
// - sync hold: FOR KEY SHARE on the jobs a sync request runs, in a transaction of its own
//   for the whole run. It conflicts only with FOR UPDATE (a duplicate's takeover claim and
//   its AwaitEvent, which so wait for the run to end) and deletes, not with the finish's
//   updates (FOR NO KEY UPDATE), which run on another connection of the same request.
// - finish: the job row (lease compare-and-swap), then the inbox row before its status is
//   derived from its jobs (a fresh snapshot: two jobs of one row finishing at once settle it
//   right).
#include "inbox/postgres/postgres_inbox.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <variant>

#include "inbox/backend.h"
#include "inbox/group_commit.h"
#include "inbox/handler_gate.h"
#include "inbox/migration.h"
#include "inbox/postgres/named_params.h"
#include "inbox/postgres/pg.h"

namespace hookbox {
namespace {

using pg::Conn;
using pg::Params;
using pg::Result;

// Connections per process: enough for the HTTP threads' accepts and the workers at once;
// more would only queue inside the server on a small machine.
constexpr int kPoolSize = 10;
// Connections for sync requests' job holds and duplicates' lock waits (HoldJobs,
// AwaitEvent), apart from the pool above so that requests waiting on a lock never starve
// accepts or finishes. Opened on first use (only sync endpoints use them); when all are busy
// a request falls back to the lease poll.
constexpr int kHoldPoolSize = 16;
// Advisory lock keys. Migrations and `sql` handler setup: one fixed key. Resources: a hash of
// "endpoint \x1f resource" seeded per purpose, so accepts never wait for claims.
constexpr int64_t kMigrationLock = 0x686f6f6b626f78;  // "hookbox"
constexpr int kAcceptSeed = 1;
constexpr int kClaimSeed = 2;
// dedupe: [id, body]: a hash of "endpoint \x1f body_sha256", so that accepts of one body
// (under any ids, on any replica) look for a stored copy one at a time.
constexpr int kBodySeed = 3;

// An RFC 3339 UTC text with milliseconds, as FormatTime writes and the SQLite inbox stores.
std::string UtcText(const std::string& column) {
  return "to_char(" + column + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";
}

std::string ResourceKey(const std::string& endpoint, const std::string& resource) {
  return endpoint + '\x1f' + resource;
}

// A PostgreSQL array literal of texts: {"a","b\"c"}.
std::string TextArray(const std::vector<std::optional<std::string>>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    if (!items[i]) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char c : *items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

std::string TextArray(const std::vector<std::string>& items) {
  return TextArray(std::vector<std::optional<std::string>>(items.begin(), items.end()));
}

// Result of a StatusOr<Result>, or return its failure.
#define HOOKBOX_EXEC(var, expr)                 \
  auto var##_or = (expr);                       \
  if (!var##_or.ok()) return var##_or.status(); \
  Result& var = *var##_or

Status Exec(Conn& c, const std::string& sql, const Params& p = {}) {
  auto r = c.Exec(sql, p);
  return r.ok() ? Status::Ok() : r.status();
}

// A bulk verb's change of its jobs: $1 their ids, $2 their due times, $3 the status each
// must still have (the compare-and-swap); returns the rows of the jobs it changed.
std::string BulkUpdateSql(bool replay) {
  return std::string(
             "UPDATE jobs j SET status = 'pending', attempts = 0,"
             " next_attempt_at = u.at::timestamptz, sync = false") +
         (replay ? ", generation = j.generation + 1, last_error = NULL" : "") +
         " FROM unnest($1::bigint[], $2::text[]) AS u(id, at)"
         " WHERE j.id = u.id AND j.status = $3 RETURNING j.inbox_id";
}

// A `sql` handler statement in positional form, and how its parameters are typed.
struct UserStatement {
  std::string sql;
  std::vector<std::string> names;
  bool text_params = false;  // the server could not infer a type: all parameters are text
};

Params EventParams(const UserStatement& st, const HandlerEvent& e) {
  Params p;
  for (const std::string& name : st.names) {
    if (auto v = SqlParameter(e, name)) {
      if (v->text) {
        p.Add(*v->text);
      } else {
        p.Add(v->number);  // as text: the server reads it as the type the statement wants
      }
    } else {
      p.AddNull();  // the sql handler refuses unknown names at load
    }
  }
  return p;
}

// Where hookbox's tables are, resolved once at open (DESIGN.md, "Opening the inbox"). Every
// statement hookbox runs names its tables without a schema, so each connection of the pool
// starts with `SET search_path TO <search_path>`: the schema first, then the rest of the path
// the session resolved at open, spelled out (no "$user" left to resolve differently later).
// An unqualified name then finds the schema's table before any other, CREATE puts new tables
// there, and a `sql` handler's own tables resolve as they did on the session's path.
struct SchemaChoice {
  std::string schema;       // as named in the catalog
  std::string quoted;       // quote_ident(schema), for SQL
  std::string search_path;  // for SET search_path TO ...
  int64_t version = 0;      // the highest migration recorded there; 0 when it has no tables
};

// "a", "b" for messages.
std::string Names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "\"" : ", \"") + n + "\"";
  return out;
}

// Whether schema `s.name` holds hookbox's tables (schema_migrations and inbox: another
// program's schema_migrations alone is not an inbox), as an SQL expression.
constexpr const char* kHasTables =
    "(SELECT count(DISTINCT k.relname) = 2 FROM pg_catalog.pg_class k"
    " JOIN pg_catalog.pg_namespace n ON n.oid = k.relnamespace"
    " WHERE n.nspname = s.name AND k.relname IN ('schema_migrations', 'inbox')"
    " AND k.relkind IN ('r', 'p'))";

// The session's search_path as it resolved: the schemas it reaches, in order (existing ones
// the role has USAGE on: current_schemas(false)), quoted, and which hold hookbox's tables.
struct SessionPath {
  std::vector<std::string> names, quoted, holders;
  std::vector<int> holder_index;   // into names
  std::string setting;             // as SHOW search_path prints it
  bool set_by_connection = false;  // by the URL's options or PGOPTIONS
  // For messages: the setting and the schemas it reaches.
  std::string Describe() const {
    return "the search_path " + (setting.empty() ? std::string("''") : setting) + " reaches " +
           (names.empty() ? std::string("no schema this role may use")
                          : (names.size() == 1 ? "schema " : "schemas ") + Names(names));
  }
};

StatusOr<SessionPath> ReadSessionPath(Conn& c) {
  HOOKBOX_EXEC(path, c.Exec(std::string("SELECT s.name, quote_ident(s.name), ") + kHasTables +
                            " FROM unnest(current_schemas(false)) WITH ORDINALITY AS s(name, pos)"
                            " ORDER BY s.pos"));
  HOOKBOX_EXEC(setting, c.Exec("SELECT current_setting('search_path'), source FROM pg_settings"
                               " WHERE name = 'search_path'"));
  SessionPath out;
  for (int i = 0; i < path.rows(); ++i) {
    out.names.push_back(path.Text(i, 0));
    out.quoted.push_back(path.Text(i, 1));
    if (path.Bool(i, 2)) {
      out.holders.push_back(path.Text(i, 0));
      out.holder_index.push_back(i);
    }
  }
  if (setting.rows()) {
    out.setting = setting.Text(0, 0);
    out.set_by_connection = setting.Text(0, 1) == "client";
  }
  return out;
}

// The schemas off the session's path that hold hookbox's tables.
StatusOr<std::vector<std::string>> TablesOffPath(Conn& c) {
  HOOKBOX_EXEC(q, c.Exec(std::string("SELECT s.name FROM (SELECT nspname AS name FROM "
                                     "pg_catalog.pg_namespace) s WHERE ") +
                         kHasTables + " AND s.name <> ALL (current_schemas(false)) ORDER BY 1"));
  std::vector<std::string> out;
  for (int i = 0; i < q.rows(); ++i) out.push_back(q.Text(i, 0));
  return out;
}

// Resolves the schema: the one schema on the session's search_path that holds hookbox's tables,
// or, with none and `create`, the first schema on the path (current_schema(): where CREATE
// would put a table). Before this, an open looked the table up through the path (to_regclass)
// but created and read through whatever schema came first: a schema named after the role,
// added later, silently became a second, empty inbox, and every event already processed was
// accepted again as new (issue 29). So the cases where the path alone cannot tell are refused,
// naming the schemas and the setting that pins one:
// - tables in two schemas of the path (an inbox already forked): which one is the inbox is
//   the operator's call;
// - none on the path, but some schema of the database off the path holds them (another role's
//   path, a renamed schema), unless the connection itself set search_path (the URL's
//   `options=-csearch_path%3D...`, or PGOPTIONS): a new inbox is then on purpose.
StatusOr<SchemaChoice> ResolveSchema(Conn& c, bool create) {
  auto read = ReadSessionPath(c);
  if (!read.ok()) return read.status();
  const SessionPath& path = *read;
  if (path.holders.size() > 1) {
    return Status::Unavailable(
        "hookbox tables in more than one schema",
        "schemas " + Names(path.holders) + " each hold an inbox, and " + path.Describe() +
            ": pin the one that is the inbox with ?options=-csearch_path%3D<schema> in the "
            "database URL (see README, PostgreSQL)");
  }
  if (path.holders.empty()) {
    auto off_path = TablesOffPath(c);
    if (!off_path.ok()) return off_path.status();
    if (!off_path->empty() && !(create && path.set_by_connection)) {
      return Status::Unavailable(
          "no hookbox tables on the search_path",
          "schema " + Names(*off_path) + " holds them, but " + path.Describe() +
              " (it leaves out schemas this role has no USAGE on): to use them, add "
              "?options=-csearch_path%3D" +
              off_path->front() + " to the database URL (see README, PostgreSQL)");
    }
    if (!create) {
      return Status::Unavailable("no hookbox tables in this database",
                                 path.Describe() + ": run `hookbox migrate` first (or `serve`)");
    }
    if (path.names.empty()) {
      return Status::Unavailable("no schema to create hookbox's tables in",
                                 path.Describe() +
                                     ": create one, or name one with "
                                     "?options=-csearch_path%3D<schema> in the URL");
    }
  }
  const size_t chosen = path.holders.empty() ? 0 : static_cast<size_t>(path.holder_index.front());
  SchemaChoice out;
  out.schema = path.names[chosen];
  out.quoted = path.quoted[chosen];
  out.search_path = out.quoted;
  for (size_t i = 0; i < path.names.size(); ++i) {
    if (i != chosen) out.search_path += ", " + path.quoted[i];
  }
  if (!path.holders.empty()) {
    HOOKBOX_EXEC(
        v, c.Exec("SELECT coalesce(max(version), 0) FROM " + out.quoted + ".schema_migrations"));
    out.version = v.Int(0, 0);
  }
  return out;
}

// The newest migration this binary knows.
int64_t LatestMigration() {
  int64_t latest = 0;
  for (const Migration& m : kPostgresMigrations) latest = std::max<int64_t>(latest, m.version);
  return latest;
}

// `serve` and `migrate`: resolves the schema and applies what is missing, in one transaction
// under the migration lock (replicas starting at once apply each migration once). An inbox
// already up to date is only read: no CREATE privilege is needed then.
Status Migrate(Conn& c, SchemaChoice* choice, std::vector<std::string>* applied) {
  Status s;
  if (s = Exec(c, "SELECT pg_advisory_xact_lock($1::bigint)", Params().Add(kMigrationLock));
      !s.ok()) {
    return s;
  }
  auto resolved = ResolveSchema(c, /*create=*/true);
  if (!resolved.ok()) return resolved.status();
  *choice = *resolved;
  if (choice->version >= LatestMigration()) return Status::Ok();
  // The migrations name their tables without a schema: they go where the pool will look.
  if (s = c.Run("SET LOCAL search_path TO " + choice->search_path); !s.ok()) return s;
  if (s = c.Run("CREATE TABLE IF NOT EXISTS " + choice->quoted +
                ".schema_migrations (version integer PRIMARY KEY,"
                " name text NOT NULL, applied_at timestamptz NOT NULL)");
      !s.ok()) {
    return s;
  }
  for (const Migration& m : kPostgresMigrations) {
    if (m.version <= choice->version) continue;
    if (s = c.Run(m.sql); !s.ok()) return s;
    if (s = Exec(c,
                 "INSERT INTO " + choice->quoted +
                     ".schema_migrations (version, name, applied_at) VALUES ($1, $2, now())",
                 Params().Add(int64_t{m.version}).Add(m.name));
        !s.ok()) {
      return s;
    }
    if (applied) applied->push_back(m.name);
  }
  choice->version = LatestMigration();
  return Status::Ok();
}

// The operator's verbs: resolve the schema and check it, with reads only. They never create
// or migrate (no CREATE privilege, no lock): a database without hookbox's tables, or whose
// migrations are behind this binary (its statements may use what they add), is refused.
Status CheckSchema(Conn& c, SchemaChoice* choice) {
  auto resolved = ResolveSchema(c, /*create=*/false);
  if (!resolved.ok()) return resolved.status();
  *choice = *resolved;
  if (choice->version < LatestMigration()) {
    return Status::Unavailable("the database's schema is behind this hookbox",
                               "schema \"" + choice->schema + "\" has migration " +
                                   std::to_string(choice->version) + ", this hookbox needs " +
                                   std::to_string(LatestMigration()) +
                                   ": run `hookbox migrate` (or start `serve`, which migrates)");
  }
  return Status::Ok();
}

// Sets each inbox row's status from its jobs: dead if any job is dead, processed (at the
// time given for the row) when all are done, processing otherwise. The rows are locked
// first, in id order, in a statement of their own, so that the jobs are read as of after
// any concurrent settle of the same rows committed. `rows`: inbox id -> finish time.
Status SettleRows(Conn& c, const std::map<int64_t, std::string>& rows) {
  std::vector<std::string> ids, ats;
  for (const auto& [id, at] : rows) {
    ids.push_back(std::to_string(id));
    ats.push_back(at);
  }
  Status s = Exec(c, "SELECT 1 FROM inbox WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE",
                  Params().Add(TextArray(ids)));
  if (!s.ok()) return s;
  return Exec(c,
              "UPDATE inbox i SET"
              " status = CASE"
              "   WHEN EXISTS (SELECT 1 FROM jobs WHERE inbox_id = i.id AND status = 'dead')"
              "     THEN 'dead'"
              "   WHEN NOT EXISTS (SELECT 1 FROM jobs WHERE inbox_id = i.id AND status <> 'done')"
              "     THEN 'processed'"
              "   ELSE 'processing' END,"
              " processed_at = CASE"
              "   WHEN NOT EXISTS (SELECT 1 FROM jobs WHERE inbox_id = i.id AND status <> 'done')"
              "     THEN r.at ELSE NULL END"
              " FROM unnest($1::bigint[], $2::timestamptz[]) AS r (id, at) WHERE i.id = r.id",
              Params().Add(TextArray(ids)).Add(TextArray(ats)));
}

Status SettleRow(Conn& c, int64_t inbox_id, const std::string& now) {
  return SettleRows(c, {{inbox_id, now}});
}

// The arrays FinishMany's statement unnests: one element per finish, in each column.
Params FinishArrays(const std::vector<FinishRequest>& finishes) {
  std::vector<std::optional<std::string>> job, token, status, next_at, last_error, finished,
      outcome, detail, number, refund;
  for (const FinishRequest& f : finishes) {
    const JobOutcome& o = f.outcome;
    job.emplace_back(std::to_string(f.job->job_id));
    token.emplace_back(f.job->lease_token);
    status.emplace_back(JobStatusFor(o.next));
    next_at.push_back(o.next == JobOutcome::Next::kRetry
                          ? std::optional<std::string>(FormatTime(o.next_attempt_at))
                          : std::nullopt);
    // StorableText: PostgreSQL text must be UTF-8 without NUL, and SQLite stores the same.
    last_error.push_back(o.outcome != Outcome::kOk
                             ? std::optional<std::string>(StorableText(o.detail))
                             : std::nullopt);
    finished.emplace_back(FormatTime(o.finished_at));
    outcome.emplace_back(OutcomeName(o.outcome));
    detail.emplace_back(StorableText(o.detail));
    number.emplace_back(std::to_string(f.job->event.attempt));
    refund.emplace_back(o.refund_try ? "1" : "0");
  }
  Params p;
  for (const auto* column : {&job, &token, &status, &next_at, &last_error, &finished, &outcome,
                             &detail, &number, &refund}) {
    p.Add(TextArray(*column));
  }
  return p;
}

// The columns a claim reads: the job, and the stored event its handler gets.
const std::string& ClaimColumns() {
  static const std::string columns =
      "j.id, j.inbox_id, j.handler, j.attempts, i.endpoint, i.event_id, i.event_type,"
      " i.resource_id, i.sequence, i.body, i.headers, " +
      UtcText("i.received_at") +
      ", (SELECT count(*) FROM attempts a WHERE a.job = j.id), j.generation";
  return columns;
}

ClaimedJob ReadClaim(const Result& r, int row) {
  ClaimedJob c;
  c.job_id = r.Int(row, 0);
  c.inbox_id = r.Int(row, 1);
  c.handler = r.Text(row, 2);
  c.budget_used = static_cast<int>(r.Int(row, 3)) + 1;
  c.event.endpoint = r.Text(row, 4);
  c.event.event_id = r.Text(row, 5);
  c.event.event_type = r.Text(row, 6);
  c.event.resource_id = r.Text(row, 7);
  c.event.sequence = r.Text(row, 8);
  c.event.body = r.Bytes(row, 9);
  c.event.headers_json = r.Text(row, 10);
  c.event.received_at = r.Text(row, 11);
  c.event.attempt = static_cast<int>(r.Int(row, 12)) + 1;
  c.event.generation = static_cast<int>(r.Int(row, 13));
  c.lease_token = NewLeaseToken();
  return c;
}

// Gives each selected (and row-locked) job to `owner`: a new lease token, lease_until,
// attempts + 1, an open attempts row; an attempt abandoned by a dead worker is marked so.
Status LeaseJobs(Conn& c, const std::vector<ClaimedJob>& jobs, const std::string& owner,
                 TimePoint now, std::chrono::milliseconds lease) {
  const std::string now_text = FormatTime(now);
  const std::string until = FormatTime(now + lease);
  Status s;
  for (const ClaimedJob& j : jobs) {
    if (s = Exec(c,
                 "UPDATE attempts SET detail = 'abandoned: the lease ran out (worker stopped"
                 " or died)' WHERE job = $1 AND finished_at IS NULL",
                 Params().Add(j.job_id));
        !s.ok()) {
      return s;
    }
    if (s = Exec(c,
                 "UPDATE jobs SET status = 'processing', attempts = attempts + 1,"
                 " lease_owner = $1, lease_token = $2, lease_until = $3 WHERE id = $4",
                 Params().Add(owner).Add(j.lease_token).Add(until).Add(j.job_id));
        !s.ok()) {
      return s;
    }
    if (s = Exec(c,
                 "INSERT INTO attempts (job, number, started_at, generation)"
                 " VALUES ($1, $2, $3, $4)",
                 Params()
                     .Add(j.job_id)
                     .Add(int64_t{j.event.attempt})
                     .Add(now_text)
                     .Add(int64_t{j.event.generation}));
        !s.ok()) {
      return s;
    }
  }
  // The rows last, in ascending id order, so two claims of jobs of the same rows never wait
  // for each other in a cycle.
  std::set<int64_t> rows;
  for (const ClaimedJob& j : jobs) rows.insert(j.inbox_id);
  for (int64_t row : rows) {
    if (s = Exec(c, "UPDATE inbox SET status = 'processing' WHERE id = $1 AND status = 'pending'",
                 Params().Add(row));
        !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

// The event's unfinished jobs for a sync request: all of them, unless one is leased to
// someone else. The jobs rows are locked first, so two requests taking over at once
// serialize: the second sees the first's leases. NOWAIT: rows locked by another request
// (the hold of the one running them, see HoldJobs) make the event busy at once (state
// kBusy, Conflict returned so the transaction rolls back); the caller waits for that lock
// within its own sync_wait (AwaitEvent), not here within the pool's lock_timeout.
Status ClaimEventInto(Conn& c, int64_t inbox_id, const std::string& owner, TimePoint now,
                      std::chrono::milliseconds lease, EventClaim* out) {
  const std::string now_text = FormatTime(now);
  auto locked_or = c.Exec(
      "SELECT status = 'processing' AND lease_until >= $2::timestamptz"
      " FROM jobs WHERE inbox_id = $1"
      " AND status IN ('pending', 'processing') ORDER BY id"
      " FOR UPDATE NOWAIT",
      Params().Add(inbox_id).Add(now_text));
  if (!locked_or.ok()) {
    if (c.last_sqlstate() != "55P03") return locked_or.status();
    out->state = EventClaim::State::kBusy;
    return Status::Conflict("event busy", "its jobs are locked by the request running them");
  }
  Result& locked = *locked_or;
  for (int i = 0; i < locked.rows(); ++i) {
    if (locked.Bool(i, 0)) {
      out->state = EventClaim::State::kBusy;
      return Status::Ok();
    }
  }
  if (locked.rows() == 0) {
    out->state = EventClaim::State::kSettled;
    HOOKBOX_EXEC(row, c.Exec("SELECT status FROM inbox WHERE id = $1", Params().Add(inbox_id)));
    if (row.rows() > 0) out->row_status = row.Text(0, 0);
    return Status::Ok();
  }
  HOOKBOX_EXEC(q, c.Exec("SELECT " + ClaimColumns() +
                             " FROM jobs j JOIN inbox i ON i.id = j.inbox_id WHERE j.inbox_id = $1"
                             " AND j.status IN ('pending', 'processing') ORDER BY j.id",
                         Params().Add(inbox_id)));
  for (int i = 0; i < q.rows(); ++i) out->jobs.push_back(ReadClaim(q, i));
  out->state = out->jobs.empty() ? EventClaim::State::kSettled : EventClaim::State::kClaimed;
  return LeaseJobs(c, out->jobs, owner, now, lease);
}

constexpr const char* kRowColumnsHead =
    "id, endpoint, event_id, id_source, event_type, resource_id, sequence, body_sha256,"
    " headers, status, ";

const std::string& RowColumns() {
  static const std::string columns = std::string(kRowColumnsHead) + UtcText("received_at") + ", " +
                                     UtcText("processed_at") + ", duplicates, " +
                                     UtcText("last_duplicate_at");
  return columns;
}

InboxRow ReadRow(const Result& r, int row) {
  InboxRow x;
  x.id = r.Int(row, 0);
  x.endpoint = r.Text(row, 1);
  x.event_id = r.Text(row, 2);
  x.id_source = r.Text(row, 3);
  x.event_type = r.Text(row, 4);
  x.resource_id = r.Text(row, 5);
  x.sequence = r.Text(row, 6);
  x.body_sha256 = r.Text(row, 7);
  x.headers_json = r.Text(row, 8);
  x.status = r.Text(row, 9);
  x.received_at = r.Text(row, 10);
  x.processed_at = r.Text(row, 11);
  x.duplicates = r.Int(row, 12);
  x.last_duplicate_at = r.Text(row, 13);
  return x;
}

class PostgresInbox final : public Inbox {
 public:
  PostgresInbox(std::string url, std::vector<std::string> setup)
      : pool_(url, setup, kPoolSize), holds_(std::move(url), std::move(setup), kHoldPoolSize) {}

  // A simple accept waiting for its group (see Accept): on its caller's stack.
  struct PendingAccept {
    explicit PendingAccept(const Event* e) : event(e) {}
    const Event* event;
    StatusOr<AcceptResult> result = Status::Internal("not accepted");
  };
  // 64 rows of 13 parameters: a statement well under the protocol's 65,535 parameters.
  static constexpr size_t kMaxAcceptGroup = 64;

  StatusOr<AcceptResult> Accept(const Event& event) override {
    AcceptResult result{};
    if (event.resource_id.empty() && event.sync_owner.empty() && !event.dedupe_body) {
      // No gate, no sync claim: group-committed with the simple accepts of other requests
      // (group_commit.h), their rows and jobs in one statement, one round trip, one commit.
      PendingAccept mine{&event};
      accepts_.Submit(mine, kMaxAcceptGroup,
                      [this](const std::vector<PendingAccept*>& group) { AcceptGroup(group); });
      return std::move(mine.result);
    }
    Status s = Transact([&](Conn& c) {
      result = AcceptResult{};
      return AcceptInto(c, event, &result);
    });
    if (!s.ok()) return s;
    return result;
  }

  using Inbox::ClaimJobs;
  StatusOr<std::vector<ClaimedJob>> ClaimJobs(const std::string& owner, int max, TimePoint now,
                                              std::chrono::milliseconds lease,
                                              const ClaimLimits& limits) override {
    std::vector<ClaimedJob> claimed;
    // A claim lost in a server crash only makes its job run again (at least once, as after
    // any crash): its commit need not wait for the WAL flush. (The token bucket's update
    // commits with it: a lost one gives back tokens for jobs that run again anyway.)
    Status s = Transact(
        [&](Conn& c) {
          claimed.clear();
          return ClaimInto(c, owner, max, now, lease, limits, &claimed);
        },
        "BEGIN; SET LOCAL synchronous_commit TO off");
    if (!s.ok()) return s;
    return claimed;
  }

  // ---- Handler state (issue 25): the operator's pause, `handler list`, the circuit ----

  StatusOr<int64_t> SetPaused(const std::vector<HandlerRef>& handlers, bool paused,
                              const std::string& reason, TimePoint now) override {
    int64_t changed = 0;
    Status s = Transact([&](Conn& c) -> Status {
      changed = 0;
      for (const HandlerRef& ref : handlers) {
        HandlerState st;
        if (Status l = LockState(c, ref.endpoint, ref.handler, &st); !l.ok()) return l;
        if (!ApplyPause(st, paused, reason, now)) continue;
        if (Status w = StoreState(c, st); !w.ok()) return w;
        ++changed;
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return changed;
  }

  // Handlers()'s job counts, into `by`.
  static Status CountJobsByHandler(
      Conn& c, TimePoint now, std::map<std::pair<std::string, std::string>, HandlerStatus>* by) {
    HOOKBOX_EXEC(n, c.Exec("SELECT i.endpoint, j.handler,"
                           " count(*) FILTER (WHERE j.status = 'pending'"
                           "   AND j.next_attempt_at > $1::timestamptz),"
                           " count(*) FILTER (WHERE j.status = 'pending'"
                           "   AND j.next_attempt_at <= $1::timestamptz),"
                           " count(*) FILTER (WHERE j.status = 'processing'),"
                           " count(*) FILTER (WHERE j.status = 'dead')"
                           " FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                           " WHERE j.status IN ('pending', 'processing', 'dead')"
                           " GROUP BY i.endpoint, j.handler",
                           Params().Add(FormatTime(now))));
    for (int i = 0; i < n.rows(); ++i) {
      HandlerStatus& h = (*by)[{n.Text(i, 0), n.Text(i, 1)}];
      h.pending = n.Int(i, 2);
      h.due = n.Int(i, 3);
      h.running = n.Int(i, 4);
      h.dead = n.Int(i, 5);
    }
    return Status::Ok();
  }

  StatusOr<std::vector<HandlerStatus>> Handlers(TimePoint now, bool count_jobs) override {
    std::vector<HandlerStatus> out;
    Status s = Read([&](Conn& c) -> Status {
      out.clear();
      std::map<std::pair<std::string, std::string>, HandlerStatus> by;
      HOOKBOX_EXEC(q, c.Exec("SELECT " + StateColumns() + " FROM handler_state"));
      for (int i = 0; i < q.rows(); ++i) {
        HandlerState st = ReadState(q, i);
        by[{st.endpoint, st.handler}].state = std::move(st);
      }
      if (count_jobs) {
        if (Status counted = CountJobsByHandler(c, now, &by); !counted.ok()) return counted;
      }
      for (auto& [key, h] : by) {
        h.state.endpoint = key.first;
        h.state.handler = key.second;
        out.push_back(std::move(h));
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return out;
  }

  StatusOr<std::optional<CircuitTransition>> RecordCircuit(const HandlerRef& handler,
                                                           Outcome outcome,
                                                           const CircuitLimit& limit,
                                                           TimePoint now) override {
    std::optional<CircuitTransition> t;
    Status s = Transact([&](Conn& c) -> Status {
      HandlerState st;
      if (Status l = LockState(c, handler.endpoint, handler.handler, &st); !l.ok()) return l;
      const HandlerState before = st;
      t = ApplyOutcome(st, outcome, limit, now);
      if (!t && st.failures == before.failures && st.probe_until == before.probe_until) {
        return Status::Ok();  // nothing to write (the common ok of a closed circuit)
      }
      return StoreState(c, st);
    });
    if (!s.ok()) return s;
    return t;
  }

  StatusOr<Outcome> FinishJob(const ClaimedJob& job, const JobOutcome& outcome, const SqlWork* sql,
                              const JobOutcome* sql_failed) override {
    Outcome recorded = outcome.outcome;
    Status s =
        Transact([&](Conn& c) { return FinishInto(c, job, outcome, sql, sql_failed, &recorded); });
    if (!s.ok()) return s;
    return recorded;
  }

  // One transaction for the batch. The finishes lock their jobs and then their inbox rows,
  // rows in id order, so two replicas' batches cannot deadlock. A batch in which no finish
  // runs sql statements (the common case) is three statements whatever its size
  // (FinishMany); one with sql, or whose FinishMany the server refuses as a whole (text it
  // cannot store), goes finish by finish in (inbox_id, job_id) order, a savepoint each, so
  // that only the bad one fails.
  std::vector<StatusOr<Outcome>> FinishJobs(const std::vector<FinishRequest>& finishes) override {
    std::vector<size_t> order(finishes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::tie(finishes[a].job->inbox_id, finishes[a].job->job_id) <
             std::tie(finishes[b].job->inbox_id, finishes[b].job->job_id);
    });
    const bool plain = std::none_of(finishes.begin(), finishes.end(), [](const FinishRequest& f) {
      return f.sql && f.outcome.outcome == Outcome::kOk;
    });
    std::vector<StatusOr<Outcome>> results(finishes.size(), Status::Internal("not finished"));
    Status s = Transact(
        [&](Conn& c) -> Status {
          if (plain && finishes.size() > 1) {
            Status many = FinishMany(c, finishes, &results);
            if (many.ok() || c.broken()) return many;
            if (Status rb = c.Run("ROLLBACK TO SAVEPOINT many"); !rb.ok()) return rb;
          }
          for (size_t i : order) {
            if (Status one = FinishAlone(c, finishes[i], &results[i]); !one.ok()) return one;
          }
          return Status::Ok();
        },
        "BEGIN; SAVEPOINT many");
    if (!s.ok()) std::fill(results.begin(), results.end(), StatusOr<Outcome>(s));
    return results;
  }

  StatusOr<EventClaim> ClaimEvent(const std::string& endpoint, const std::string& event_id,
                                  const std::string& owner, TimePoint now,
                                  std::chrono::milliseconds lease) override {
    EventClaim claim;
    Status s = Transact([&](Conn& c) -> Status {
      claim = EventClaim{};
      HOOKBOX_EXEC(row, c.Exec("SELECT id FROM inbox WHERE endpoint = $1 AND event_id = $2",
                               Params().Add(endpoint).Add(event_id)));
      if (row.rows() == 0) return Status::NotFound("no such event", endpoint + " " + event_id);
      return ClaimEventInto(c, row.Int(0, 0), owner, now, lease, &claim);
    });
    if (!s.ok() && claim.state != EventClaim::State::kBusy) return s;
    return claim;
  }

  Status RenewLeases(std::span<const ClaimedJob> jobs, TimePoint now,
                     std::chrono::milliseconds lease) override {
    if (jobs.empty()) return Status::Ok();
    std::vector<std::string> ids, tokens;
    for (const ClaimedJob& job : jobs) {
      ids.push_back(std::to_string(job.job_id));
      tokens.push_back(job.lease_token);
    }
    return Transact([&](Conn& c) -> Status {
      // Locked in id order first, as every transaction that locks several jobs does.
      if (Status s = Exec(c,
                          "SELECT id FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id"
                          " FOR UPDATE",
                          Params().Add(TextArray(ids)));
          !s.ok()) {
        return s;
      }
      HOOKBOX_EXEC(
          renewed,
          c.Exec("UPDATE jobs j SET lease_until = $1::timestamptz"
                 " FROM unnest($2::bigint[], $3::text[]) AS r (id, token)"
                 " WHERE j.id = r.id AND j.lease_token = r.token"
                 " AND j.status = 'processing' RETURNING j.id, r.token",
                 Params().Add(FormatTime(now + lease)).Add(TextArray(ids)).Add(TextArray(tokens))));
      std::set<std::pair<int64_t, std::string>> held;
      for (int i = 0; i < renewed.rows(); ++i) held.emplace(renewed.Int(i, 0), renewed.Text(i, 1));
      for (const ClaimedJob& job : jobs) {
        // Not Ok: the transaction rolls back, and the leases that did hold stay as they were.
        if (held.count({job.job_id, job.lease_token}) == 0) return LeaseLost(job);
      }
      return Status::Ok();
    });
  }

  std::unique_ptr<JobsHold> HoldJobs(const std::vector<ClaimedJob>& jobs) override {
    if (jobs.empty()) return nullptr;
    auto handle = holds_.TryAcquire();
    if (!handle.ok()) return nullptr;
    std::string ids = "{";
    for (const ClaimedJob& job : jobs) {
      if (ids.size() > 1) ids += ',';
      ids += std::to_string(job.job_id);
    }
    ids += '}';
    Conn& c = **handle;
    if (!c.Run("BEGIN").ok() ||
        !c.Exec("SELECT 1 FROM jobs WHERE id = ANY($1::bigint[]) FOR KEY SHARE", Params().Add(ids))
             .ok()) {
      return nullptr;  // the handle rolls back whatever began
    }
    struct Hold final : JobsHold {
      explicit Hold(pg::Pool::Handle h) : handle(std::move(h)) {}
      pg::Pool::Handle handle;  // its release rolls the transaction back: the lock goes
    };
    return std::make_unique<Hold>(std::move(*handle));
  }

  bool AwaitEvent(const std::string& endpoint, const std::string& event_id,
                  std::chrono::milliseconds wait) override {
    auto handle = holds_.TryAcquire();
    if (!handle.ok()) return false;
    Conn& c = **handle;
    const std::string lock_jobs =
        "SELECT 1 FROM jobs WHERE inbox_id = (SELECT id FROM inbox WHERE endpoint = $1"
        " AND event_id = $2) AND status IN ('pending', 'processing') FOR UPDATE";
    const Params p = Params().Add(endpoint).Add(event_id);
    if (!c.Run("BEGIN").ok()) return false;
    // First without waiting: no lock held means nothing to wait for (the lease poll goes on).
    if (c.Exec(lock_jobs + " NOWAIT", p).ok() || c.last_sqlstate() != "55P03") return false;
    const auto ms = std::max<int64_t>(1, wait.count());
    if (!c.Run("ROLLBACK; BEGIN; SET LOCAL lock_timeout = " + std::to_string(ms)).ok()) {
      return false;
    }
    (void)c.Exec(lock_jobs, p);  // returns when the holder ends, or after `wait`
    return true;                 // the handle rolls back: nothing of this wait stays locked
  }

  StatusOr<int> Retry(const std::string& endpoint, const std::string& event_id,
                      TimePoint now) override {
    int rearmed = 0;
    Status s = Transact([&](Conn& c) -> Status {
      HOOKBOX_EXEC(row, c.Exec("SELECT id, resource_id FROM inbox WHERE endpoint = $1"
                               " AND event_id = $2",
                               Params().Add(endpoint).Add(event_id)));
      if (row.rows() == 0) return Status::NotFound("no such event", endpoint + " " + event_id);
      const int64_t inbox_id = row.Int(0, 0);
      const std::string resource = row.Text(0, 1);
      // A re-armed job may head its resource again: no claim may decide on the old state.
      Status st;
      if (!resource.empty()) {
        st = Exec(c, "SELECT pg_advisory_xact_lock(hashtextextended($1::text, $2::bigint))",
                  Params().Add(ResourceKey(endpoint, resource)).Add(kClaimSeed));
        if (!st.ok()) return st;
      }
      HOOKBOX_EXEC(up, c.Exec("UPDATE jobs SET status = 'pending', attempts = 0,"
                              " next_attempt_at = $1, sync = false"
                              " WHERE inbox_id = $2 AND status = 'dead'",
                              Params().Add(FormatTime(now)).Add(inbox_id)));
      rearmed = static_cast<int>(up.Affected());
      if (rearmed == 0) {
        return Status::InvalidArgument("no dead job to retry", endpoint + " " + event_id);
      }
      return Exec(c, "UPDATE inbox SET status = 'pending', processed_at = NULL WHERE id = $1",
                  Params().Add(inbox_id));
    });
    if (!s.ok()) return s;
    return rearmed;
  }

  // ---- The bulk verbs (inbox.h, BulkRequest).
  StatusOr<BulkPlan> PlanBulk(const BulkRequest& r) override {
    if (Status s = CheckBulk(r); !s.ok()) return s;
    BulkPlan plan;
    // One snapshot: the counts as of one moment.
    Status s = Transact(
        [&](Conn& c) -> Status {
          plan = BulkPlan{};
          {
            std::vector<SqlValue> values;
            const std::string sql = "SELECT status, count(*)" +
                                    BulkRowsTail(r, SqlDialect::kPostgres, &values) +
                                    " GROUP BY status";
            HOOKBOX_EXEC(q, c.Exec(sql, ParamsOf(values)));
            for (int i = 0; i < q.rows(); ++i) CountMatched(&plan, q.Text(i, 0), q.Int(i, 1));
          }
          {
            std::vector<SqlValue> values;
            const std::string sql = "SELECT i.endpoint, j.handler, count(*)" +
                                    BulkJobsTail(r, SqlDialect::kPostgres, &values) +
                                    " GROUP BY i.endpoint, j.handler";
            HOOKBOX_EXEC(q, c.Exec(sql, ParamsOf(values)));
            for (int i = 0; i < q.rows(); ++i) {
              plan.jobs_by_handler[q.Text(i, 0) + "/" + q.Text(i, 1)] = q.Int(i, 2);
              plan.jobs += q.Int(i, 2);
            }
          }
          std::vector<SqlValue> values;
          const std::string sql =
              "SELECT count(DISTINCT j.inbox_id), " + UtcText("min(i.received_at)") + ", " +
              UtcText("max(i.received_at)") + BulkJobsTail(r, SqlDialect::kPostgres, &values);
          HOOKBOX_EXEC(q, c.Exec(sql, ParamsOf(values)));
          plan.rows = q.Int(0, 0);
          plan.oldest = q.Text(0, 1);
          plan.newest = q.Text(0, 2);
          FinishPlan(&plan);
          return Status::Ok();
        },
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    if (!s.ok()) return s;
    return plan;
  }

  StatusOr<int64_t> RetryDead(const BulkRequest& r) override { return ActBulk(r); }
  StatusOr<int64_t> Replay(const BulkRequest& r) override { return ActBulk(r); }

  Status HoldForHandler(const std::vector<ClaimedJob>& jobs, TimePoint /*now*/) override {
    std::vector<const ClaimedJob*> sorted;
    for (const ClaimedJob& job : jobs) sorted.push_back(&job);
    std::sort(sorted.begin(), sorted.end(),
              [](const ClaimedJob* a, const ClaimedJob* b) { return a->job_id < b->job_id; });
    return Transact([&](Conn& c) -> Status {
      for (const ClaimedJob* job : sorted) {  // jobs rows in id order: the lock order
        HOOKBOX_EXEC(held, c.Exec("UPDATE jobs SET status = 'pending',"
                                  " attempts = greatest(attempts - 1, 0), next_attempt_at = $1,"
                                  " last_error = $2, lease_owner = NULL, lease_token = NULL,"
                                  " lease_until = NULL"
                                  " WHERE id = $3 AND lease_token = $4 AND status = 'processing'",
                                  Params()
                                      .Add(std::string(kHeldUntil))
                                      .Add(HeldReason(job->handler))
                                      .Add(job->job_id)
                                      .Add(job->lease_token)));
        if (held.Affected() == 0) continue;  // lease lost: its new owner decides
        Status st = Exec(c, "DELETE FROM attempts WHERE job = $1 AND number = $2",
                         Params().Add(job->job_id).Add(int64_t{job->event.attempt}));
        if (!st.ok()) return st;
      }
      return Status::Ok();
    });
  }

  StatusOr<int64_t> ReleaseHeld(const std::vector<HandlerRef>& handlers, TimePoint now) override {
    int64_t released = 0;
    std::vector<std::string> endpoints, names;
    for (const HandlerRef& h : handlers) {
      endpoints.push_back(h.endpoint);
      names.push_back(h.handler);
    }
    Status s = Transact([&](Conn& c) -> Status {
      HOOKBOX_EXEC(up,
                   c.Exec("UPDATE jobs j SET next_attempt_at = $1, last_error = NULL"
                          " FROM inbox i, unnest($3::text[], $4::text[]) AS h (endpoint, handler)"
                          " WHERE j.status = 'pending' AND j.next_attempt_at = $2"
                          " AND i.id = j.inbox_id AND i.endpoint = h.endpoint"
                          " AND j.handler = h.handler",
                          Params()
                              .Add(FormatTime(now))
                              .Add(std::string(kHeldUntil))
                              .Add(TextArray(endpoints))
                              .Add(TextArray(names))));
      released = up.Affected();
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return released;
  }

  StatusOr<std::vector<HandlerBacklog>> UnfinishedByHandler() override {
    std::vector<HandlerBacklog> backlog;
    Status s = Read([&](Conn& c) -> Status {
      backlog.clear();
      HOOKBOX_EXEC(q, c.Exec("SELECT i.endpoint, j.handler, count(*),"
                             " count(*) FILTER (WHERE j.next_attempt_at = $1)"
                             " FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                             " WHERE j.status IN ('pending', 'processing')"
                             " GROUP BY i.endpoint, j.handler ORDER BY i.endpoint, j.handler",
                             Params().Add(std::string(kHeldUntil))));
      for (int i = 0; i < q.rows(); ++i) {
        backlog.push_back({q.Text(i, 0), q.Text(i, 1), q.Int(i, 2), q.Int(i, 3)});
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return backlog;
  }

  StatusOr<ReassignCounts> Reassign(const std::string& endpoint, const std::string& from,
                                    const std::string& to, TimePoint now) override {
    ReassignCounts counts;
    Status s = Transact([&](Conn& c) -> Status {
      HOOKBOX_EXEC(moved,
                   c.Exec("UPDATE jobs j SET handler = $1,"
                          " last_error = CASE WHEN j.next_attempt_at = $2 THEN NULL"
                          "   ELSE j.last_error END,"
                          " next_attempt_at = CASE WHEN j.next_attempt_at = $2 THEN $3::timestamptz"
                          "   ELSE j.next_attempt_at END"
                          " FROM inbox i WHERE i.id = j.inbox_id AND i.endpoint = $5"
                          " AND j.handler = $4 AND j.status IN ('pending', 'dead')"
                          " AND NOT EXISTS (SELECT 1 FROM jobs j2"
                          "   WHERE j2.inbox_id = j.inbox_id AND j2.handler = $1)",
                          Params()
                              .Add(to)
                              .Add(std::string(kHeldUntil))
                              .Add(FormatTime(now))
                              .Add(from)
                              .Add(endpoint)));
      counts.moved = moved.Affected();
      HOOKBOX_EXEC(kept, c.Exec("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                                " WHERE i.endpoint = $1 AND j.handler = $2 AND j.status <> 'done'",
                                Params().Add(endpoint).Add(from)));
      counts.kept = kept.Int(0, 0);
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return counts;
  }

  StatusOr<int64_t> DropJobs(const std::string& endpoint, const std::string& handler,
                             TimePoint now) override {
    int64_t dropped = 0;
    Status s = Transact([&](Conn& c) -> Status {
      // Jobs rows first (the lock order), then their inbox rows in id order (SettleRows).
      HOOKBOX_EXEC(del, c.Exec("DELETE FROM jobs j USING inbox i"
                               " WHERE i.id = j.inbox_id AND i.endpoint = $1 AND j.handler = $2"
                               " AND j.status IN ('pending', 'dead') RETURNING j.inbox_id",
                               Params().Add(endpoint).Add(handler)));
      dropped = del.Affected();
      std::map<int64_t, std::string> rows;
      for (int i = 0; i < del.rows(); ++i) rows.emplace(del.Int(i, 0), FormatTime(now));
      if (rows.empty()) return Status::Ok();
      return SettleRows(c, rows);
    });
    if (!s.ok()) return s;
    return dropped;
  }

  StatusOr<std::vector<std::string>> LeaseOwners() override {
    std::vector<std::string> owners;
    Status s = Read([&](Conn& c) -> Status {
      owners.clear();
      HOOKBOX_EXEC(q, c.Exec("SELECT DISTINCT lease_owner FROM jobs WHERE status = 'processing'"
                             " AND lease_owner IS NOT NULL"));
      for (int i = 0; i < q.rows(); ++i) owners.push_back(q.Text(i, 0));
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return owners;
  }

  Status ExpireLeases(const std::string& owner_prefix, TimePoint now) override {
    return Transact([&](Conn& c) {
      return Exec(c,
                  "UPDATE jobs SET lease_until = $1 WHERE status = 'processing'"
                  " AND starts_with(lease_owner, $2::text)",
                  Params().Add(FormatTime(now - std::chrono::milliseconds(1))).Add(owner_prefix));
    });
  }

  Status PrepareSql(const SqlWork& sql) override {
    // Setup under the migration lock: replicas starting at once must not race on
    // CREATE TABLE IF NOT EXISTS (it is not safe against itself in PostgreSQL).
    Status s = Transact([&](Conn& c) -> Status {
      Status st = Exec(c, "SELECT pg_advisory_xact_lock($1::bigint)", Params().Add(kMigrationLock));
      for (const std::string& statement : sql.setup) {
        if (!st.ok()) break;
        st = c.Run(statement);
      }
      return st;
    });
    if (!s.ok()) return s;
    // Outside a transaction: a failed prepare aborts nothing.
    return Read([&](Conn& c) -> Status {
      for (const std::string& statement : sql.statements) {
        UserStatement st = Translate(statement);
        Status p = c.Prepare(st.sql, false, static_cast<int>(st.names.size()));
        if (!p.ok() && p.ToString().find("SQLSTATE 42P18") != std::string::npos) {
          // e.g. `SELECT :event_id`: with every parameter text, the server can decide.
          p = c.Prepare(st.sql, true, static_cast<int>(st.names.size()));
          if (p.ok()) MarkTextParams(statement);
        }
        if (!p.ok()) return p;
      }
      return Status::Ok();
    });
  }

  StatusOr<std::vector<InboxRow>> List(const ListFilter& f) override {
    std::vector<SqlValue> values;
    const std::string sql =
        "SELECT " + RowColumns() + ListQueryTail(f, SqlDialect::kPostgres, &values);
    Params params;
    for (const SqlValue& v : values) std::visit([&](const auto& x) { params.Add(x); }, v);
    std::vector<InboxRow> rows;
    Status s = Read([&](Conn& c) -> Status {
      rows.clear();
      HOOKBOX_EXEC(q, c.Exec(sql, params));
      for (int i = 0; i < q.rows(); ++i) rows.push_back(ReadRow(q, i));
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return rows;
  }

  StatusOr<std::vector<DeadJob>> DeadJobs(int64_t before_job_id, int limit) override {
    std::vector<DeadJob> dead;
    Status s = Read([&](Conn& c) -> Status {
      dead.clear();
      HOOKBOX_EXEC(
          q, c.Exec("SELECT " + RowColumns() +
                        ", job_id, handler, coalesce(last_error, ''), attempts FROM inbox JOIN"
                        " (SELECT id AS job_id, inbox_id, handler, last_error, attempts FROM jobs"
                        " WHERE status = 'dead' AND ($1 = 0 OR id < $1)) j"
                        " ON j.inbox_id = inbox.id ORDER BY job_id DESC LIMIT $2",
                    Params().Add(before_job_id).Add(int64_t{limit})));
      for (int i = 0; i < q.rows(); ++i) {
        dead.push_back({ReadRow(q, i), q.Int(i, 14), q.Text(i, 15), q.Text(i, 16), q.Int(i, 17)});
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return dead;
  }

  StatusOr<InboxDetail> Show(const std::string& endpoint, const std::string& event_id) override {
    InboxDetail d;
    // One snapshot: the row, its jobs and their attempts as of one moment.
    Status s = Transact(
        [&](Conn& c) -> Status {
          d = InboxDetail{};
          HOOKBOX_EXEC(q, c.Exec("SELECT " + RowColumns() +
                                     ", body FROM inbox WHERE endpoint = $1 AND event_id = $2",
                                 Params().Add(endpoint).Add(event_id)));
          if (q.rows() == 0) return Status::NotFound("no such event", endpoint + " " + event_id);
          d.row = ReadRow(q, 0);
          d.row.body = q.Bytes(0, 14);
          HOOKBOX_EXEC(
              jq, c.Exec("SELECT id, handler, status, attempts, " + UtcText("next_attempt_at") +
                             ", lease_owner, " + UtcText("lease_until") +
                             ", last_error, generation FROM jobs"
                             " WHERE inbox_id = $1 ORDER BY id",
                         Params().Add(d.row.id)));
          for (int i = 0; i < jq.rows(); ++i) {
            JobRow j;
            j.id = jq.Int(i, 0);
            j.handler = jq.Text(i, 1);
            j.status = jq.Text(i, 2);
            j.attempts = jq.Int(i, 3);
            j.next_attempt_at = jq.Text(i, 4);
            j.lease_owner = jq.Text(i, 5);
            j.lease_until = jq.Text(i, 6);
            j.last_error = jq.Text(i, 7);
            j.generation = jq.Int(i, 8);
            d.jobs.push_back(std::move(j));
          }
          for (JobRow& j : d.jobs) {
            HOOKBOX_EXEC(aq, c.Exec("SELECT number, " + UtcText("started_at") + ", " +
                                        UtcText("finished_at") +
                                        ", coalesce(outcome, ''), detail, generation"
                                        " FROM attempts WHERE job = $1 ORDER BY number",
                                    Params().Add(j.id)));
            for (int i = 0; i < aq.rows(); ++i) {
              j.attempt_rows.push_back({aq.Int(i, 0), aq.Int(i, 5), aq.Text(i, 1), aq.Text(i, 2),
                                        aq.Text(i, 3), aq.Text(i, 4)});
            }
          }
          return Status::Ok();
        },
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    if (!s.ok()) return s;
    return d;
  }

  Status Clear(const std::string& endpoint, const std::string& event_id, TimePoint now) override {
    return Transact([&](Conn& c) -> Status {
      // Jobs rows first (the lock order), then the row; jobs and attempts go with it. Locked,
      // the jobs show their latest leases (a claim that committed meanwhile included), and
      // none can be claimed before the delete.
      HOOKBOX_EXEC(jobs, c.Exec("SELECT j.status = 'processing' AND j.lease_until >= $3"
                                "::timestamptz FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                                " WHERE i.endpoint = $1 AND i.event_id = $2 ORDER BY j.id"
                                " FOR UPDATE OF j",
                                Params().Add(endpoint).Add(event_id).Add(FormatTime(now))));
      for (int i = 0; i < jobs.rows(); ++i) {
        if (jobs.Bool(i, 0)) return ClearRefused(endpoint, event_id);
      }
      HOOKBOX_EXEC(del, c.Exec("DELETE FROM inbox WHERE endpoint = $1 AND event_id = $2",
                               Params().Add(endpoint).Add(event_id)));
      if (del.Affected() == 0) return Status::NotFound("no such event", endpoint + " " + event_id);
      return Status::Ok();
    });
  }

  StatusOr<InboxStats> Stats() override {
    InboxStats stats;
    Status s = Read([&](Conn& c) -> Status {
      stats.clear();
      HOOKBOX_EXEC(q, c.Exec("SELECT endpoint, status, count(*) FROM inbox"
                             " GROUP BY endpoint, status"));
      for (int i = 0; i < q.rows(); ++i) stats[q.Text(i, 0)][q.Text(i, 1)] = q.Int(i, 2);
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return stats;
  }

  StatusOr<QueueStats> Queue(bool count_done) override {
    QueueStats stats;
    Status s = Read([&](Conn& c) -> Status {
      stats = QueueStats{};
      HOOKBOX_EXEC(jobs, c.Exec(QueueCountSql(count_done)));
      for (int i = 0; i < jobs.rows(); ++i) stats.jobs_by_status[jobs.Text(i, 0)] = jobs.Int(i, 1);
      HOOKBOX_EXEC(oldest, c.Exec("SELECT " + UtcText("min(i.received_at)") +
                                  " FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                                  " WHERE j.status IN ('pending', 'processing')"));
      stats.oldest_unfinished_received_at = oldest.Text(0, 0);
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return stats;
  }

  StatusOr<PurgeCounts> Purge(const PurgeRequest& r) override {
    PurgeCounts counts;
    static const std::string kRows = PurgeRowCondition('$', "::timestamptz");
    static const std::string kCount = "SELECT count(*) FROM inbox WHERE " + kRows;
    static const std::string kDelete =
        "DELETE FROM inbox WHERE id IN (SELECT id FROM inbox WHERE " + kRows + " LIMIT $3)";
    for (const PurgeTarget& target : PurgeTargets(r, &counts)) {
      auto n = PurgeRows(r, kCount.c_str(), kDelete.c_str(),
                         Params().Add(target.status).Add(FormatTime(target.before)));
      if (!n.ok()) return n.status();
      *target.count = *n;
    }
    auto n = PurgeRows(r, "SELECT count(*) FROM sequences WHERE updated_at < $1::timestamptz",
                       "DELETE FROM sequences WHERE (endpoint, resource_id) IN"
                       " (SELECT endpoint, resource_id FROM sequences"
                       " WHERE updated_at < $1::timestamptz LIMIT $2)",
                       Params().Add(FormatTime(r.sequences_before)));
    if (!n.ok()) return n.status();
    counts.sequences = *n;
    return counts;
  }

  Status Ping() override {
    return Read([](Conn& c) { return Exec(c, "SELECT 1"); });
  }

 private:
  // Runs fn in one transaction on a pooled connection and commits when it returns Ok. A
  // connection found dead at BEGIN (the server restarted since it was last used) is replaced
  // once: nothing ran on it yet. A COMMIT whose answer is lost is Unavailable: the
  // transaction may or may not have committed, and the caller must not claim it did.
  template <typename F>
  Status Transact(F&& fn, const char* begin = "BEGIN") {
    for (int attempt = 0;; ++attempt) {
      auto handle = pool_.Acquire();
      if (!handle.ok()) return handle.status();
      Conn& c = **handle;
      if (Status s = c.Run(begin); !s.ok()) {
        if (c.broken() && attempt == 0) continue;
        return s;
      }
      Status s = fn(c);
      if (s.ok() && c.failed_transaction()) {
        s = Status::Internal("storage error", "a statement failed inside the transaction");
      }
      if (!s.ok()) {
        if (!c.broken()) (void)c.Run("ROLLBACK");
        return s;
      }
      return c.Run("COMMIT");
    }
  }

  // Runs fn on a pooled connection without BEGIN: each statement its own transaction.
  template <typename F>
  Status Autocommit(F&& fn) {
    auto handle = pool_.Acquire();
    if (!handle.ok()) return handle.status();
    return fn(**handle);
  }

  // Runs fn (reads only) on a pooled connection, once more on a fresh connection if the
  // first one turns out to be dead.
  template <typename F>
  Status Read(F&& fn) {
    for (int attempt = 0;; ++attempt) {
      auto handle = pool_.Acquire();
      if (!handle.ok()) return handle.status();
      Status s = fn(**handle);
      if (!s.ok() && (*handle)->broken() && attempt == 0) continue;
      return s;
    }
  }

  UserStatement Translate(const std::string& statement) {
    std::lock_guard lock(user_mu_);
    auto it = user_sql_.find(statement);
    if (it == user_sql_.end()) {
      pg::PositionalSql p = pg::ToPositional(statement);
      it = user_sql_.emplace(statement, UserStatement{std::move(p.sql), std::move(p.names)}).first;
    }
    return it->second;
  }

  void MarkTextParams(const std::string& statement) {
    std::lock_guard lock(user_mu_);
    user_sql_[statement].text_params = true;
  }

  // Runs one `sql` handler statement with the event's parameters.
  Status RunUserStatement(Conn& c, const std::string& statement, const HandlerEvent& e) {
    UserStatement st = Translate(statement);
    auto r = c.Exec(st.sql, EventParams(st, e), st.text_params);
    return r.ok() ? Status::Ok() : r.status();
  }

  // The inbox row of an event: $1..$12 of kInsertRow.
  static Params RowParams(const Event& e, const std::string& now) {
    Params p;
    AddRow(p, e, now);
    return p;
  }
  static void AddRow(Params& p, const Event& e, const std::string& now) {
    p.Add(e.endpoint).Add(e.event_id).Add(e.id_source).Add(e.event_type).Add(e.resource_id);
    p.Add(e.sequence).Add(e.sequence_key).Add(e.body_sha256).Add(e.headers_json);
    p.AddBytes(e.body).Add(e.handlers.empty() ? "ignored" : "pending").Add(now);
  }

  // The accepts of a group (see Accept): the first delivery of each (endpoint, event_id) in
  // the group goes into one statement that inserts every row and its jobs, in the group's
  // order (ON CONFLICT DO NOTHING: a row already stored, or stored by a concurrent
  // statement, is skipped); it is its own transaction, so the group costs one round trip and
  // one commit. The deliveries it did not insert are duplicates, counted one by one.
  // Not ok only when that statement failed, which then stored nothing.
  Status AcceptMany(Conn& c, const std::vector<PendingAccept*>& group) {
    std::vector<PendingAccept*> firsts;
    std::set<std::pair<std::string, std::string>> keys;
    for (PendingAccept* p : group) {
      if (keys.emplace(p->event->endpoint, p->event->event_id).second) firsts.push_back(p);
    }
    Params params;
    std::string rows, input;
    for (size_t i = 0; i < firsts.size(); ++i) {
      const Event& e = *firsts[i]->event;
      AddRow(params, e, FormatTime(e.received_at));
      params.Add(TextArray(e.handlers));
      const size_t k = i * 13;
      auto at = [&](int n) { return "$" + std::to_string(k + n); };
      rows += std::string(i ? "," : "") + "(";
      for (int n = 1; n <= 12; ++n) rows += (n > 1 ? ", " : "") + at(n);
      rows += ")";
      input += std::string(i ? "," : "") + "(" + at(1) + "::text, " + at(2) + "::text, " + at(12) +
               "::timestamptz, " + at(13) + "::text[])";
    }
    HOOKBOX_EXEC(ins, c.Exec("WITH row AS (INSERT INTO inbox (endpoint, event_id, id_source,"
                             " event_type, resource_id, sequence, sequence_key, body_sha256,"
                             " headers, body, status, received_at) VALUES " +
                                 rows +
                                 " ON CONFLICT (endpoint, event_id) DO NOTHING"
                                 " RETURNING id, endpoint, event_id),"
                                 " input (endpoint, event_id, received_at, handlers) AS (VALUES " +
                                 input +
                                 "),"
                                 " jobs AS (INSERT INTO jobs (inbox_id, handler, status,"
                                 " next_attempt_at, sync) SELECT row.id, t.h, 'pending',"
                                 " input.received_at, false FROM row JOIN input"
                                 " USING (endpoint, event_id),"
                                 " unnest(input.handlers) WITH ORDINALITY AS t (h, n)"
                                 " ORDER BY row.id, t.n)"
                                 " SELECT endpoint, event_id FROM row",
                             params));
    std::set<std::pair<std::string, std::string>> stored;
    for (int i = 0; i < ins.rows(); ++i) stored.emplace(ins.Text(i, 0), ins.Text(i, 1));
    for (PendingAccept* p : group) {
      const Event& e = *p->event;
      AcceptResult r{};
      if (stored.erase({e.endpoint, e.event_id}) > 0) {
        r.verdict = e.handlers.empty() ? Verdict::kIgnored : Verdict::kAccepted;
        p->result = r;
        continue;
      }
      Status dup = CountDuplicate(c, e, FormatTime(e.received_at), &r);
      p->result = dup.ok() ? StatusOr<AcceptResult>(r) : StatusOr<AcceptResult>(dup);
    }
    return Status::Ok();
  }

  // Runs a group of simple accepts (the leader's work, see Accept). When the group's
  // statement fails as a whole without a doubt that nothing was stored (one event the server
  // cannot store, such as text that is not UTF-8), each delivery is tried alone, so that
  // only the bad one fails; a lost connection (Unavailable: it may have committed) fails
  // them all, and the producers' retries find what was stored.
  void AcceptGroup(const std::vector<PendingAccept*>& group) {
    Status s = Autocommit([&](Conn& c) { return AcceptMany(c, group); });
    if (s.ok()) return;
    for (PendingAccept* p : group) {
      if (s.code() == Status::Code::kUnavailable || group.size() == 1) {
        p->result = s;
        continue;
      }
      AcceptResult r{};
      Status one = Autocommit([&](Conn& c) { return AcceptSimple(c, *p->event, &r); });
      p->result = one.ok() ? StatusOr<AcceptResult>(r) : StatusOr<AcceptResult>(one);
    }
  }

  static constexpr const char* kInsertRow =
      "INSERT INTO inbox (endpoint, event_id, id_source, event_type, resource_id, sequence,"
      " sequence_key, body_sha256, headers, body, status, received_at)"
      " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
      " ON CONFLICT (endpoint, event_id) DO NOTHING";

  // A duplicate (a concurrent first delivery has committed by now: the insert waited for
  // it): counted on the original row, unless strict_body refuses another body. The gate is
  // not consulted or advanced. A statement of its own, so that it sees the row the insert
  // ran into even when that row committed after the insert's snapshot.
  Status CountDuplicate(Conn& c, const Event& e, const std::string& now, AcceptResult* out) {
    out->verdict = Verdict::kDuplicate;
    HOOKBOX_EXEC(up, c.Exec("UPDATE inbox SET duplicates = duplicates + 1, last_duplicate_at = $3"
                            " WHERE endpoint = $1 AND event_id = $2"
                            " AND (NOT $4::boolean OR body_sha256 = $5)"
                            " RETURNING body_sha256 <> $5",
                            Params()
                                .Add(e.endpoint)
                                .Add(e.event_id)
                                .Add(now)
                                .Add(e.strict_body)
                                .Add(e.body_sha256)));
    if (up.rows() > 0) {
      out->body_changed = up.Bool(0, 0);
      return Status::Ok();
    }
    HOOKBOX_EXEC(q, c.Exec("SELECT 1 FROM inbox WHERE endpoint = $1 AND event_id = $2",
                           Params().Add(e.endpoint).Add(e.event_id)));
    if (q.rows() == 0) {
      return Status::Unavailable("storage unavailable",
                                 "the event was cleared while this delivery was accepted");
    }
    out->body_changed = true;
    return Status::Conflict("event id already stored with another body", e.event_id);
  }

  // dedupe: [id, body]. Under the body's advisory lock, held to the end of the transaction
  // (a concurrent accept of the same body, under another id or on another replica, waits
  // here until this one has committed its row, then finds it): the first stored row of the
  // endpoint with this body, unless a row with this event's id exists (that one is a
  // duplicate by id, counted by the insert's path). Found: counted there, *duplicate.
  // READ COMMITTED: the SELECT's snapshot is taken after the lock is granted.
  Status BodyDuplicate(Conn& c, const Event& e, const std::string& now, AcceptResult* out,
                       bool* duplicate) {
    Status s = Exec(c, "SELECT pg_advisory_xact_lock(hashtextextended($1::text, $2::bigint))",
                    Params().Add(ResourceKey(e.endpoint, e.body_sha256)).Add(kBodySeed));
    if (!s.ok()) return s;
    HOOKBOX_EXEC(up, c.Exec("UPDATE inbox SET duplicates = duplicates + 1, last_duplicate_at = $4"
                            " WHERE id = (SELECT id FROM inbox WHERE endpoint = $1"
                            " AND body_sha256 = $2 AND NOT EXISTS (SELECT 1 FROM inbox"
                            " WHERE endpoint = $1 AND event_id = $3) ORDER BY id LIMIT 1)"
                            " RETURNING event_id",
                            Params().Add(e.endpoint).Add(e.body_sha256).Add(e.event_id).Add(now)));
    if (up.rows() == 0) return Status::Ok();
    *duplicate = true;
    out->verdict = Verdict::kDuplicate;
    out->duplicate_of = up.Text(0, 0);
    return Status::Ok();
  }

  // An event with no resource and no sync claim: the row and its jobs in one statement (its
  // own transaction), so an accept costs one round trip.
  Status AcceptSimple(Conn& c, const Event& e, AcceptResult* out) {
    const std::string now = FormatTime(e.received_at);
    Params p = RowParams(e, now);
    p.Add(TextArray(e.handlers));
    HOOKBOX_EXEC(ins, c.Exec(std::string("WITH row AS (") + kInsertRow +
                                 " RETURNING id),"
                                 " jobs AS (INSERT INTO jobs (inbox_id, handler, status,"
                                 " next_attempt_at, sync) SELECT row.id, t.h, 'pending',"
                                 " $12::timestamptz, false FROM row,"
                                 " unnest($13::text[]) WITH ORDINALITY AS t (h, n) ORDER BY t.n)"
                                 " SELECT id FROM row",
                             p));
    if (ins.rows() == 0) return CountDuplicate(c, e, now, out);
    out->verdict = e.handlers.empty() ? Verdict::kIgnored : Verdict::kAccepted;
    return Status::Ok();
  }

  // The accept transaction's body (see the comment at the top for its locks).
  Status AcceptInto(Conn& c, const Event& e, AcceptResult* out) {
    Status s;
    const std::string now = FormatTime(e.received_at);
    const bool gated = !e.resource_id.empty() && e.sequence_key.has_value();
    if (!e.resource_id.empty()) {
      s = Exec(c, "SELECT pg_advisory_xact_lock(hashtextextended($1::text, $2::bigint))",
               Params().Add(ResourceKey(e.endpoint, e.resource_id)).Add(kAcceptSeed));
      if (!s.ok()) return s;
    }
    if (e.dedupe_body) {
      bool duplicate = false;
      if (s = BodyDuplicate(c, e, now, out, &duplicate); !s.ok() || duplicate) return s;
    }
    HOOKBOX_EXEC(ins, c.Exec(std::string(kInsertRow) + " RETURNING id", RowParams(e, now)));
    if (ins.rows() == 0) return CountDuplicate(c, e, now, out);
    const int64_t inbox_id = ins.Int(0, 0);

    if (gated) {
      bool stale = false;
      if (s = GateSequence(c, e, now, &stale); !s.ok()) return s;
      if (stale) {
        out->verdict = Verdict::kStale;
        return Exec(c, "UPDATE inbox SET status = 'stale' WHERE id = $1", Params().Add(inbox_id));
      }
    }
    if (e.handlers.empty()) {
      out->verdict = Verdict::kIgnored;
      return Status::Ok();
    }
    return AddJobs(c, e, inbox_id, now, out);
  }

  // Lower than the last accepted sequence of the resource is *stale; equal is not. The
  // upsert locks the sequences row whether or not it moves it.
  Status GateSequence(Conn& c, const Event& e, const std::string& now, bool* stale) {
    HOOKBOX_EXEC(gate, c.Exec("INSERT INTO sequences (endpoint, resource_id, last_sequence,"
                              " last_event_id, updated_at) VALUES ($1, $2, $3, $4, $5)"
                              " ON CONFLICT (endpoint, resource_id) DO UPDATE"
                              " SET last_sequence = excluded.last_sequence,"
                              " last_event_id = excluded.last_event_id,"
                              " updated_at = excluded.updated_at"
                              " WHERE sequences.last_sequence <= excluded.last_sequence"
                              " RETURNING 1",
                              Params()
                                  .Add(e.endpoint)
                                  .Add(e.resource_id)
                                  .Add(*e.sequence_key)
                                  .Add(e.event_id)
                                  .Add(now)));
    *stale = gate.rows() == 0;
    return Status::Ok();
  }

  // The accepted row's jobs, in handler order; on a sync endpoint, its sql handlers' work
  // and the claim of the rest for the request.
  Status AddJobs(Conn& c, const Event& e, int64_t inbox_id, const std::string& now,
                 AcceptResult* out) {
    const bool sync = !e.sync_owner.empty();
    Status s =
        Exec(c,
             "INSERT INTO jobs (inbox_id, handler, status, next_attempt_at, sync)"
             " SELECT $1, h, 'pending', $3, $4 FROM unnest($2::text[]) WITH ORDINALITY AS t (h, n)"
             " ORDER BY n",
             Params().Add(inbox_id).Add(TextArray(e.handlers)).Add(now).Add(sync));
    if (!s.ok()) return s;
    out->verdict = Verdict::kAccepted;
    if (!sync) return Status::Ok();
    if (!e.sync_sql.empty()) {
      if (s = RunSyncSql(c, e, inbox_id, now); !s.ok()) return s;
    }
    EventClaim claim;
    if (s = ClaimEventInto(c, inbox_id, e.sync_owner, e.received_at, e.sync_lease, &claim);
        !s.ok()) {
      return s;
    }
    out->claimed = std::move(claim.jobs);
    return Status::Ok();
  }

  // mode: sync, sql handlers: their statements run in the accept transaction, and their jobs
  // are recorded done with one ok attempt. A failing statement fails the whole accept.
  Status RunSyncSql(Conn& c, const Event& e, int64_t inbox_id, const std::string& now) {
    HandlerEvent he;
    he.endpoint = e.endpoint;
    he.event_id = e.event_id;
    he.event_type = e.event_type;
    he.resource_id = e.resource_id;
    he.sequence = e.sequence;
    he.body = e.body;
    he.received_at = now;
    for (const auto& [handler, work] : e.sync_sql) {
      for (const std::string& statement : work->statements) {
        if (Status s = RunUserStatement(c, statement, he); !s.ok()) {
          if (s.code() == Status::Code::kUnavailable) return s;
          return Status::Internal("sql handler failed", s.ToString());
        }
      }
      HOOKBOX_EXEC(done, c.Exec("UPDATE jobs SET status = 'done', attempts = 1"
                                " WHERE inbox_id = $1 AND handler = $2 RETURNING id",
                                Params().Add(inbox_id).Add(handler)));
      if (done.rows() == 0) continue;
      Status s = Exec(c,
                      "INSERT INTO attempts (job, number, started_at, finished_at, outcome, detail)"
                      " VALUES ($1, 1, $2, $2, 'ok', 'sql: ran in the accept transaction')",
                      Params().Add(done.Int(0, 0)).Add(now));
      if (!s.ok()) return s;
    }
    return SettleRow(c, inbox_id, now);
  }

  // The claim transaction's body (see ClaimJobs): the due jobs, each with a resource checked
  // again under its lock, then leased to `owner`.
  //
  // Handler state (DESIGN.md, "Handler state"): the handlers held (a paused or non-closed
  // row, read by this statement's snapshot: a pause committed before it is honoured) and
  // those with a rate are left out of the plain query; with none of either it is the query
  // it always was. Each of them that may run now is then claimed apart under FOR UPDATE on
  // its state row (in one order, so claims never deadlock), which is what makes two
  // replicas share one token bucket and one probe.
  Status ClaimInto(Conn& c, const std::string& owner, int max, TimePoint now,
                   std::chrono::milliseconds lease, const ClaimLimits& limits,
                   std::vector<ClaimedJob>* out) {
    const std::string now_text = FormatTime(now);
    std::set<std::pair<std::string, std::string>> held;
    {
      HOOKBOX_EXEC(q, c.Exec("SELECT endpoint, handler FROM handler_state"
                             " WHERE paused OR circuit <> 'closed'"));
      for (int i = 0; i < q.rows(); ++i) held.emplace(q.Text(i, 0), q.Text(i, 1));
    }
    std::map<std::pair<std::string, std::string>, const HandlerRate*> rates;
    for (const HandlerRate& r : limits.rates) rates[{r.endpoint, r.handler}] = &r;
    std::set<std::pair<std::string, std::string>> apart = held;
    for (const auto& [key, rate] : rates) apart.insert(key);

    std::vector<ClaimedJob> due;
    if (Status s = DueJobs(c, now_text, max, apart, false, &due); !s.ok()) return s;
    for (ClaimedJob& job : due) job.rate_due_at.reset();  // no rate holds these
    if (Status s = KeepHeads(c, now_text, due, out); !s.ok()) return s;

    for (const auto& key : apart) {
      if (out->size() >= static_cast<size_t>(max)) break;
      auto r = rates.find(key);
      const HandlerRate* rate = r == rates.end() ? nullptr : r->second;
      HandlerState st;
      if (Status s = LockState(c, key.first, key.second, &st); !s.ok()) return s;
      const GateDecision d = DecideClaim(st, rate, now);
      const int room = max - static_cast<int>(out->size());
      const int take = d.unlimited ? room : std::min(d.budget, room);
      if (take <= 0) continue;
      std::vector<ClaimedJob> mine, heads;
      if (Status s = DueJobs(c, now_text, take, {key}, true, &mine); !s.ok()) return s;
      if (Status s = KeepHeads(c, now_text, mine, &heads); !s.ok()) return s;
      if (heads.empty()) continue;
      auto t = AfterClaim(st, rate, d, static_cast<int>(heads.size()), now, lease);
      if (Status s = StoreState(c, st); !s.ok()) return s;
      for (ClaimedJob& job : heads) {
        if (!rate) job.rate_due_at.reset();
        job.probe = t.has_value();
        out->push_back(std::move(job));
      }
    }
    return LeaseJobs(c, *out, owner, now, lease);
  }

  // The jobs of `due` that still head their resource (StillHeadsResource), onto *out.
  Status KeepHeads(Conn& c, const std::string& now_text, std::vector<ClaimedJob>& due,
                   std::vector<ClaimedJob>* out) {
    for (ClaimedJob& job : due) {
      if (!job.event.resource_id.empty()) {
        bool heads = false;
        if (Status s = StillHeadsResource(c, job, now_text, &heads); !s.ok()) return s;
        if (!heads) continue;
      }
      out->push_back(std::move(job));
    }
    return Status::Ok();
  }

  // Due jobs that head their resource's queue (as this snapshot sees it), locked, skipping
  // the ones another replica is locking right now, at most `max`, in due order. Sync jobs
  // are the producer's to retry. A job is due in one of two ways (pending and its time has
  // come; processing and its lease ran out): one query each, walking jobs_due (status,
  // next_attempt_at, id) in order and stopping after `max`, merged in that order. (One
  // query with an OR gathered and sorted every due job at each claim: 74 ms per claim with
  // a backlog of 23,000 jobs.)
  //
  // `handlers`: with `only` false, these (endpoint, handler) pairs' jobs are left out (none:
  // the plain query); with `only` true, the one pair's jobs alone are taken. Each job's
  // next_attempt_at is kept in rate_due_at (the caller drops it where no rate applies).
  Status DueJobs(Conn& c, const std::string& now_text, int max,
                 const std::set<std::pair<std::string, std::string>>& handlers, bool only,
                 std::vector<ClaimedJob>* out) {
    std::string which;
    std::vector<std::string> endpoints, names;
    for (const auto& [e, h] : handlers) {
      endpoints.push_back(e);
      names.push_back(h);
    }
    if (only) {
      which = " AND i.endpoint = $3 AND j.handler = $4";
    } else if (!handlers.empty()) {
      which = " AND (i.endpoint, j.handler) NOT IN (SELECT * FROM unnest($3::text[], $4::text[]))";
    }
    std::vector<std::pair<std::string, ClaimedJob>> due;  // (next_attempt_at, job)
    for (const char* way : {"j.status = 'pending' AND j.next_attempt_at <= $1::timestamptz",
                            "j.status = 'processing' AND j.lease_until < $1::timestamptz"}) {
      Params p;
      p.Add(now_text).Add(int64_t{max});
      if (only) {
        p.Add(endpoints[0]).Add(names[0]);
      } else if (!handlers.empty()) {
        p.Add(TextArray(endpoints)).Add(TextArray(names));
      }
      HOOKBOX_EXEC(q,
                   c.Exec("SELECT " + ClaimColumns() + ", " + UtcText("j.next_attempt_at") +
                              " FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                              " WHERE " +
                              way + which +
                              " AND NOT j.sync"
                              " AND (i.resource_id = '' OR NOT EXISTS ("
                              "   SELECT 1 FROM inbox i2 JOIN jobs j2 ON j2.inbox_id = i2.id"
                              "   WHERE i2.endpoint = i.endpoint AND i2.resource_id = i.resource_id"
                              "   AND j2.id <> j.id AND j2.status IN ('pending', 'processing')"
                              "   AND ((i2.id, j2.id) < (i.id, j.id)"
                              "        OR (j2.status = 'processing'"
                              "            AND j2.lease_until >= $1::timestamptz))))"
                              " ORDER BY j.status, j.next_attempt_at, j.id LIMIT $2"
                              " FOR UPDATE OF j SKIP LOCKED",
                          p));
      for (int i = 0; i < q.rows(); ++i) due.emplace_back(q.Text(i, 14), ReadClaim(q, i));
    }
    std::sort(due.begin(), due.end(), [](const auto& a, const auto& b) {
      return std::tie(a.first, a.second.job_id) < std::tie(b.first, b.second.job_id);
    });
    if (due.size() > static_cast<size_t>(max)) due.resize(static_cast<size_t>(max));
    for (auto& entry : due) {
      entry.second.rate_due_at = StateTime(entry.first);
      out->push_back(std::move(entry.second));
    }
    return Status::Ok();
  }

  // The state row of one handler, locked FOR UPDATE until the transaction ends; created
  // first (running, closed, full) when it has none, so that there is a row to lock.
  Status LockState(Conn& c, const std::string& endpoint, const std::string& handler,
                   HandlerState* out) {
    for (int round = 0; round < 2; ++round) {
      HOOKBOX_EXEC(q, c.Exec("SELECT " + StateColumns() +
                                 " FROM handler_state WHERE endpoint = $1 AND handler = $2"
                                 " FOR UPDATE",
                             Params().Add(endpoint).Add(handler)));
      if (q.rows() > 0) {
        *out = ReadState(q, 0);
        return Status::Ok();
      }
      if (Status s = Exec(c,
                          "INSERT INTO handler_state (endpoint, handler) VALUES ($1, $2)"
                          " ON CONFLICT DO NOTHING",
                          Params().Add(endpoint).Add(handler));
          !s.ok()) {
        return s;
      }
    }
    return Status::Internal("handler_state row vanished", endpoint + "/" + handler);
  }

  static const std::string& StateColumns() {
    static const std::string columns =
        "endpoint, handler, paused, paused_reason, coalesce(" + UtcText("paused_at") +
        ", ''), circuit, failures, coalesce(" + UtcText("open_until") + ", ''), coalesce(" +
        UtcText("probe_until") + ", ''), coalesce(tokens::text, ''), coalesce(" +
        UtcText("refilled_at") + ", '')";
    return columns;
  }

  static HandlerState ReadState(const Result& q, int i) {
    HandlerState st;
    st.endpoint = q.Text(i, 0);
    st.handler = q.Text(i, 1);
    st.paused = q.Bool(i, 2);
    st.paused_reason = q.Text(i, 3);
    st.paused_at = q.Text(i, 4);
    const std::string circuit = q.Text(i, 5);
    st.circuit = circuit == "open"        ? Circuit::kOpen
                 : circuit == "half-open" ? Circuit::kHalfOpen
                                          : Circuit::kClosed;
    st.failures = q.Int(i, 6);
    st.open_until = q.Text(i, 7);
    st.probe_until = q.Text(i, 8);
    if (std::string t = q.Text(i, 9); !t.empty()) st.tokens = std::strtod(t.c_str(), nullptr);
    st.refilled_at = q.Text(i, 10);
    return st;
  }

  static Status StoreState(Conn& c, const HandlerState& st) {
    char tokens[64] = "";
    if (st.tokens) std::snprintf(tokens, sizeof tokens, "%.17g", *st.tokens);
    return Exec(c,
                "UPDATE handler_state SET paused = $3, paused_reason = $4,"
                " paused_at = nullif($5, '')::timestamptz, circuit = $6, failures = $7,"
                " open_until = nullif($8, '')::timestamptz,"
                " probe_until = nullif($9, '')::timestamptz,"
                " tokens = nullif($10, '')::double precision,"
                " refilled_at = nullif($11, '')::timestamptz"
                " WHERE endpoint = $1 AND handler = $2",
                Params()
                    .Add(st.endpoint)
                    .Add(st.handler)
                    .Add(st.paused)
                    .Add(st.paused_reason)
                    .Add(st.paused_at)
                    .Add(CircuitName(st.circuit))
                    .Add(st.failures)
                    .Add(st.open_until)
                    .Add(st.probe_until)
                    .Add(std::string_view(tokens))
                    .Add(st.refilled_at));
  }

  // Under the resource's claim lock, with a fresh snapshot: does the job still head its
  // resource, with no live lease on another job of it? (Another replica may have committed a
  // claim, or `inbox retry` re-armed an earlier job, since the claim's snapshot.) *heads is
  // false too while another claim of this resource is deciding.
  Status StillHeadsResource(Conn& c, const ClaimedJob& job, const std::string& now_text,
                            bool* heads) {
    HOOKBOX_EXEC(
        lock,
        c.Exec(
            "SELECT pg_try_advisory_xact_lock(hashtextextended($1::text,"
            " $2::bigint))",
            Params().Add(ResourceKey(job.event.endpoint, job.event.resource_id)).Add(kClaimSeed)));
    if (!lock.Bool(0, 0)) return Status::Ok();
    HOOKBOX_EXEC(head, c.Exec("SELECT NOT EXISTS ("
                              " SELECT 1 FROM inbox i2 JOIN jobs j2 ON j2.inbox_id = i2.id"
                              " WHERE i2.endpoint = $1 AND i2.resource_id = $2"
                              " AND j2.id <> $3 AND j2.status IN ('pending', 'processing')"
                              " AND ((i2.id, j2.id) < ($4::bigint, $3::bigint)"
                              "      OR (j2.status = 'processing'"
                              "          AND j2.lease_until >= $5::timestamptz)))",
                              Params()
                                  .Add(job.event.endpoint)
                                  .Add(job.event.resource_id)
                                  .Add(job.job_id)
                                  .Add(job.inbox_id)
                                  .Add(now_text)));
    *heads = head.Bool(0, 0);
    return Status::Ok();
  }

  // One finish of a batch in a savepoint of its own: *result is its outcome, or its failure
  // when only it failed; the return is a failure of the whole transaction.
  Status FinishAlone(Conn& c, const FinishRequest& f, StatusOr<Outcome>* result) {
    Outcome recorded = f.outcome.outcome;
    if (Status sp = c.Run("SAVEPOINT finish"); !sp.ok()) return sp;
    Status one =
        FinishInto(c, *f.job, f.outcome, f.sql, f.sql ? &f.sql_failed : nullptr, &recorded);
    if (!one.ok()) {
      if (c.broken()) return one;
      if (Status rb = c.Run("ROLLBACK TO SAVEPOINT finish"); !rb.ok()) return rb;
      *result = one;
    } else {
      *result = recorded;
    }
    return c.Run("RELEASE SAVEPOINT finish");
  }

  // Finishes without sql statements, all at once: one statement moves every job whose lease
  // token still matches (the compare-and-swap of FinishInto) and records its attempt, a
  // second locks the jobs' inbox rows in id order, a third settles them (its own statement,
  // so that it sees what other transactions committed before the locks were granted, as
  // SettleRow does). A job whose lease was lost gets Conflict and changes nothing.
  Status FinishMany(Conn& c, const std::vector<FinishRequest>& finishes,
                    std::vector<StatusOr<Outcome>>* results) {
    HOOKBOX_EXEC(
        moved, c.Exec("WITH f AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[],"
                      " $4::timestamptz[], $5::text[], $6::timestamptz[], $7::text[], $8::text[],"
                      " $9::integer[], $10::integer[]) AS f (job, token, status, next_at,"
                      " last_error, finished, outcome, detail, number, refund)),"
                      " cas AS (UPDATE jobs j SET status = f.status,"
                      " next_attempt_at = coalesce(f.next_at, j.next_attempt_at),"
                      " last_error = f.last_error, attempts = greatest(j.attempts - f.refund, 0),"
                      " lease_owner = NULL, lease_token = NULL, lease_until = NULL FROM f"
                      " WHERE j.id = f.job AND j.lease_token = f.token AND j.status = 'processing'"
                      " RETURNING j.id, j.inbox_id),"
                      " attempt AS (UPDATE attempts a SET finished_at = f.finished,"
                      " outcome = f.outcome, detail = f.detail FROM f JOIN cas ON cas.id = f.job"
                      " WHERE a.job = f.job AND a.number = f.number)"
                      " SELECT id FROM cas",
                      FinishArrays(finishes)));
    std::set<int64_t> done;
    for (int r = 0; r < moved.rows(); ++r) done.insert(moved.Int(r, 0));
    std::map<int64_t, std::string> rows;  // inbox id -> the latest finish of its jobs
    for (size_t i = 0; i < finishes.size(); ++i) {
      const ClaimedJob& job = *finishes[i].job;
      if (done.count(job.job_id) == 0) {
        (*results)[i] = LeaseLost(job);
        continue;
      }
      (*results)[i] = finishes[i].outcome.outcome;
      std::string& at = rows[job.inbox_id];
      // One format throughout: text order is time order.
      at = std::max(at, FormatTime(finishes[i].outcome.finished_at));
    }
    return rows.empty() ? Status::Ok() : SettleRows(c, rows);
  }

  // The finishing transaction's body: the sql handler's statements (only once the lease is
  // known to be held: nothing of a worker that lost its lease runs), then the job moved on
  // with a compare-and-swap on the lease token and the attempt recorded (one statement),
  // and the row's status.
  Status FinishInto(Conn& c, const ClaimedJob& job, const JobOutcome& outcome, const SqlWork* sql,
                    const JobOutcome* sql_failed, Outcome* recorded) {
    Status lost = LeaseLost(job);
    if (sql && outcome.outcome == Outcome::kOk) {
      HOOKBOX_EXEC(held, c.Exec("SELECT 1 FROM jobs WHERE id = $1 AND lease_token = $2"
                                " AND status = 'processing' FOR NO KEY UPDATE",
                                Params().Add(job.job_id).Add(job.lease_token)));
      if (held.rows() == 0) return lost;
    }

    const JobOutcome* effective = &outcome;
    JobOutcome failed;
    Status s;
    if (sql && outcome.outcome == Outcome::kOk) {
      if (s = c.Run("SAVEPOINT sql_handler"); !s.ok()) return s;
      for (const std::string& statement : sql->statements) {
        if (s = RunUserStatement(c, statement, job.event); !s.ok()) break;
      }
      if (!s.ok()) {
        if (c.broken()) return s;  // the connection is gone: nothing to record on it
        if (Status rb = c.Run("ROLLBACK TO SAVEPOINT sql_handler"); !rb.ok()) return rb;
        failed = SqlFailedOutcome(outcome, sql_failed, s);
        effective = &failed;
      }
      if (s = c.Run("RELEASE SAVEPOINT sql_handler"); !s.ok()) return s;
    }

    const std::string finished = FormatTime(effective->finished_at);
    Params cas;
    cas.Add(JobStatusFor(effective->next));
    if (effective->next == JobOutcome::Next::kRetry)
      cas.Add(FormatTime(effective->next_attempt_at));
    else
      cas.AddNull();
    if (effective->outcome != Outcome::kOk)
      cas.Add(StorableText(effective->detail));
    else
      cas.AddNull();
    cas.Add(job.job_id).Add(job.lease_token).Add(finished).Add(OutcomeName(effective->outcome));
    cas.Add(StorableText(effective->detail)).Add(int64_t{job.event.attempt});
    cas.Add(int64_t{effective->refund_try ? 1 : 0});
    HOOKBOX_EXEC(moved, c.Exec("WITH cas AS (UPDATE jobs SET status = $1,"
                               " next_attempt_at = coalesce($2::timestamptz, next_attempt_at),"
                               " last_error = $3, attempts = greatest(attempts - $10, 0),"
                               " lease_owner = NULL, lease_token = NULL, lease_until = NULL"
                               " WHERE id = $4 AND lease_token = $5 AND status = 'processing'"
                               " RETURNING id),"
                               " attempt AS (UPDATE attempts SET finished_at = $6, outcome = $7,"
                               " detail = $8 WHERE job = $4 AND number = $9"
                               " AND EXISTS (SELECT 1 FROM cas))"
                               " SELECT count(*) FROM cas",
                               cas));
    if (moved.Int(0, 0) == 0) return lost;
    *recorded = effective->outcome;
    return SettleRow(c, job.inbox_id, finished);
  }

  // Counts (dry run) or deletes, one batch per transaction, the rows a purge query selects;
  // the delete takes the batch size as its last parameter.
  StatusOr<int64_t> PurgeRows(const PurgeRequest& r, const char* count_sql, const char* delete_sql,
                              const Params& params) {
    if (r.dry_run) {
      int64_t n = 0;
      Status s = Read([&](Conn& c) -> Status {
        HOOKBOX_EXEC(q, c.Exec(count_sql, params));
        n = q.Int(0, 0);
        return Status::Ok();
      });
      if (!s.ok()) return s;
      return n;
    }
    int64_t total = 0;
    for (;;) {
      int64_t deleted = 0;
      Params batch = params;
      batch.Add(int64_t{r.batch});
      Status s = Transact([&](Conn& c) -> Status {
        HOOKBOX_EXEC(del, c.Exec(delete_sql, batch));
        deleted = del.Affected();
        return Status::Ok();
      });
      if (!s.ok()) return s;
      total += deleted;
      if (deleted < r.batch) return total;
    }
  }

  static Params ParamsOf(const std::vector<SqlValue>& values) {
    Params params;
    for (const SqlValue& v : values) std::visit([&](const auto& x) { params.Add(x); }, v);
    return params;
  }

  // RetryDead and Replay: the jobs to act on, read at once (in received order), then changed
  // `batch` at a time, one transaction each, in the lock order of every transaction here:
  // the claim locks of the batch's resources (a re-armed job may head its resource again, so
  // no claim may decide on the old state, as in Retry), the jobs rows, the inbox rows in
  // ascending id order. Each job by a compare-and-swap on the status it was read in: a job
  // another replica or operator changed since is left alone.
  // A job a bulk verb acts on, with its row and the claim lock key of its resource.
  struct BulkTarget {
    int64_t job, row;
    std::string resource_key;  // "" = no resource
  };

  // The jobs a bulk verb acts on, in received order.
  StatusOr<std::vector<BulkTarget>> BulkTargets(const BulkRequest& r) {
    std::vector<BulkTarget> targets;
    std::vector<SqlValue> values;
    const std::string sql = "SELECT j.id, j.inbox_id, i.endpoint, i.resource_id" +
                            BulkJobsTail(r, SqlDialect::kPostgres, &values) +
                            " ORDER BY i.id, j.id";
    const Params params = ParamsOf(values);
    Status s = Read([&](Conn& c) -> Status {
      targets.clear();
      HOOKBOX_EXEC(q, c.Exec(sql, params));
      for (int i = 0; i < q.rows(); ++i) {
        const std::string resource = q.Text(i, 3);
        targets.push_back({q.Int(i, 0), q.Int(i, 1),
                           resource.empty() ? "" : ResourceKey(q.Text(i, 2), resource)});
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return targets;
  }

  // The rows whose jobs a bulk verb re-armed, locked in id order, pending again unless
  // another job of the row stays dead (a retry of one handler).
  Status ReopenBulkRows(Conn& c, const std::set<int64_t>& rows) {
    if (rows.empty()) return Status::Ok();
    std::string row_ids = "{";
    for (int64_t id : rows) {
      if (row_ids.size() > 1) row_ids += ',';
      row_ids += std::to_string(id);
    }
    row_ids += '}';
    if (Status st = Exec(c,
                         "SELECT id FROM inbox WHERE id = ANY($1::bigint[]) ORDER BY id"
                         " FOR UPDATE",
                         Params().Add(row_ids));
        !st.ok()) {
      return st;
    }
    return Exec(c,
                "UPDATE inbox SET status = CASE WHEN EXISTS (SELECT 1 FROM jobs"
                " WHERE jobs.inbox_id = inbox.id AND jobs.status = 'dead') THEN 'dead'"
                " ELSE 'pending' END, processed_at = NULL WHERE id = ANY($1::bigint[])",
                Params().Add(row_ids));
  }

  StatusOr<int64_t> ActBulk(const BulkRequest& r) {
    if (Status s = CheckBulk(r); !s.ok()) return s;
    auto found = BulkTargets(r);
    if (!found.ok()) return found.status();
    const std::vector<BulkTarget>& targets = *found;
    const bool replay = r.verb == BulkVerb::kReplay;
    const char* from_status = replay ? "done" : "dead";
    const std::string update = BulkUpdateSql(replay);
    const size_t batch = static_cast<size_t>(std::max(1, r.batch));
    int64_t rearmed = 0;
    for (size_t from = 0; from < targets.size(); from += batch) {
      const size_t to = std::min(targets.size(), from + batch);
      std::set<std::string> resources;
      std::string ids = "{", due = "{";
      for (size_t i = from; i < to; ++i) {
        if (!targets[i].resource_key.empty()) resources.insert(targets[i].resource_key);
        if (i > from) {
          ids += ',';
          due += ',';
        }
        ids += std::to_string(targets[i].job);
        due += FormatTime(BulkDueAt(r, static_cast<int64_t>(i)));
      }
      ids += '}';
      due += '}';
      int64_t changed = 0;
      Status s = Transact([&](Conn& c) -> Status {
        changed = 0;
        for (const std::string& key : resources) {
          if (Status st = Exec(c,
                               "SELECT pg_advisory_xact_lock(hashtextextended($1::text,"
                               " $2::bigint))",
                               Params().Add(key).Add(kClaimSeed));
              !st.ok()) {
            return st;
          }
        }
        if (Status st = Exec(c,
                             "SELECT id FROM jobs WHERE id = ANY($1::bigint[]) AND status = $2"
                             " ORDER BY id FOR UPDATE",
                             Params().Add(ids).Add(from_status));
            !st.ok()) {
          return st;
        }
        HOOKBOX_EXEC(up, c.Exec(update, Params().Add(ids).Add(due).Add(from_status)));
        changed = up.rows();
        std::set<int64_t> rows;
        for (int i = 0; i < up.rows(); ++i) rows.insert(up.Int(i, 0));
        return ReopenBulkRows(c, rows);
      });
      if (!s.ok()) return s;
      rearmed += changed;
    }
    return rearmed;
  }

  pg::Pool pool_;
  pg::Pool holds_;
  GroupCommit<PendingAccept> accepts_;
  std::mutex user_mu_;                             // guards user_sql_
  std::map<std::string, UserStatement> user_sql_;  // the sql handlers' statements, translated
};

}  // namespace

StatusOr<std::unique_ptr<Inbox>> OpenPostgresInbox(const InboxOptions& options,
                                                   std::vector<std::string>* applied) {
  // lock_timeout plays SQLite's busy_timeout: a write that waits longer for a lock fails
  // (Unavailable, 503) instead of holding the request. durability: normal lets a commit
  // return before its WAL is flushed (the last commits may be lost if the server crashes).
  std::vector<std::string> setup = {"SET lock_timeout = '5s'"};
  if (!options.durable) setup.emplace_back("SET synchronous_commit = off");
  // One connection resolves the schema (and migrates), before the pool exists: every pooled
  // connection then starts pinned to it.
  auto conn = Conn::Connect(options.database, setup);
  if (!conn.ok()) return conn.status();
  SchemaChoice choice;
  Status s;
  if (options.create) {
    if (s = (*conn)->Run("BEGIN"); s.ok()) s = Migrate(**conn, &choice, applied);
    // A COMMIT whose answer is lost may or may not have committed: Unavailable either way.
    s = s.ok() ? (*conn)->Run("COMMIT") : s;
  } else {
    s = CheckSchema(**conn, &choice);
  }
  if (!s.ok()) {
    if (applied) applied->clear();  // rolled back with the connection
    if (s.code() == Status::Code::kUnavailable) return s;
    return Status::Unavailable(options.create ? "cannot migrate database" : "cannot open database",
                               s.ToString());
  }
  setup.push_back("SET search_path TO " + choice.search_path);
  return std::unique_ptr<Inbox>(
      std::make_unique<PostgresInbox>(options.database, std::move(setup)));
}

}  // namespace hookbox
