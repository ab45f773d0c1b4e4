// The SQLite inbox: leader-led group commit, the accept transaction (dedupe, sequence
// gate, jobs) and the operator's reads (see sqlite_inbox.h).
#include "inbox/sqlite/sqlite_inbox.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>
#include <variant>

#include "inbox/backend.h"
#include "inbox/group_commit.h"
#include "inbox/handler_gate.h"
#include "inbox/migration.h"
#include "inbox/sqlite/db.h"
#include "ops/log.h"
#include "ops/storage_health.h"

namespace hookbox {
namespace {

using sqlite::Db;

// Result of a StatusOr-returning Prepare, or return its failure.
#define HOOKBOX_PREPARE(var, db, sql)           \
  auto var##_or = (db).Prepare(sql);            \
  if (!var##_or.ok()) return var##_or.status(); \
  auto& var = *var##_or.value()

// The highest migration recorded in the file, read without a write lock; 0 when the file has
// no hookbox tables (a new file, or another program's).
StatusOr<int64_t> SchemaVersion(Db& db) {
  Status s;
  {
    HOOKBOX_PREPARE(q, db,
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                    " AND name IN ('schema_migrations', 'inbox')");
    const bool has_tables = q.Step(&s) && q.Int(0) == 2;
    if (!s.ok()) return s;
    if (!has_tables) return int64_t{0};
  }
  HOOKBOX_PREPARE(q, db, "SELECT coalesce(max(version), 0) FROM schema_migrations");
  int64_t version = 0;
  if (q.Step(&s)) version = q.Int(0);
  if (!s.ok()) return s;
  return version;
}

int64_t LatestMigration() {
  int64_t latest = 0;
  for (const Migration& m : kSqliteMigrations) latest = std::max<int64_t>(latest, m.version);
  return latest;
}

// `serve` and `migrate`: applies what is missing in one BEGIN IMMEDIATE transaction. A file
// already up to date is only read, so a daemon starting while a shell's `purge` holds the
// write lock does not wait for it.
Status Migrate(Db& db, std::vector<std::string>* applied) {
  auto before = SchemaVersion(db);
  if (!before.ok()) return before.status();
  if (*before >= LatestMigration()) return Status::Ok();
  Status s = db.Exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
      "name TEXT NOT NULL, applied_at TEXT NOT NULL)");
  if (!s.ok()) return s;
  sqlite::Transaction tx(db);
  if (s = tx.Begin(); !s.ok()) return s;
  int64_t current = 0;
  {
    // Again under the lock: another process may have migrated since the read above.
    HOOKBOX_PREPARE(q, db, "SELECT coalesce(max(version), 0) FROM schema_migrations");
    if (q.Step(&s)) current = q.Int(0);
    if (!s.ok()) return s;
  }
  for (const Migration& m : kSqliteMigrations) {
    if (m.version <= current) continue;
    if (s = db.Exec(m.sql); !s.ok()) return s;
    HOOKBOX_PREPARE(rec, db,
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
    rec.Bind(1, int64_t{m.version})
        .Bind(2, m.name)
        .Bind(3, FormatTime(std::chrono::system_clock::now()));
    if (s = rec.Run(); !s.ok()) return s;
    if (applied) applied->push_back(m.name);
  }
  return tx.Commit();
}

// The operator's verbs (issue 29): a read of the schema's version, never BEGIN IMMEDIATE, so
// they work while another process holds the write lock. A file without hookbox's tables, or
// whose migrations are behind this binary (its statements may use what they add), is refused
// and left as it is.
Status CheckSchema(Db& db, const std::string& path) {
  auto version = SchemaVersion(db);
  if (!version.ok()) return version.status();
  if (*version == 0) {
    return Status::Unavailable("no hookbox tables in the database",
                               path + ": run `hookbox migrate` first (or `serve`)");
  }
  if (*version < LatestMigration()) {
    return Status::Unavailable("the database's schema is behind this hookbox",
                               path + " has migration " + std::to_string(*version) +
                                   ", this hookbox needs " + std::to_string(LatestMigration()) +
                                   ": run `hookbox migrate` (or start `serve`, which migrates)");
  }
  return Status::Ok();
}

// Runs a statement that returns no rows (SAVEPOINT, RELEASE) as a cached prepared statement:
// Db::Exec (sqlite3_exec) would parse it again each time, and the writer runs these for
// every delivery.
Status RunCached(Db& db, const std::string& sql) {
  auto q = db.Prepare(sql);
  if (!q.ok()) return q.status();
  return (*q)->Run();
}

// The writer's busy handler. Another process's write transaction (`hookbox purge`, `inbox
// clear` from a shell) holds the database's write lock for a while; SQLite's busy_timeout
// handler waits for it by sleeping 1, 2, 5, ... then 100 ms at a time, so it sleeps through
// the moment the lock is free, and a process that writes transaction after transaction (the
// purge) takes it again first: the daemon's accepts waited up to the 5 s timeout and were
// answered 503. Polling every millisecond, for the same 5 s at most, gets the lock within a
// millisecond of its release.
int PollForWriteLock(void*, int tries) {
  constexpr int kPolls = 5000;
  if (tries >= kPolls) return 0;  // SQLITE_BUSY: the caller answers 503
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return 1;
}

// Binds the `sql` handler's named parameters that a statement uses.
void BindEventParams(sqlite::Stmt& q, const HandlerEvent& e) {
  for (std::string_view name : kSqlParameters) {
    // name.data(): each of kSqlParameters views a whole string literal, so it ends in NUL.
    if (int i = q.ParamIndex(name.data()); i > 0) {
      const EventParam v = *SqlParameter(e, name);
      if (v.text) {
        q.Bind(i, *v.text);
      } else {
        q.Bind(i, v.number);
      }
    }
  }
}

// Sets the inbox row's status from its jobs: dead if any job is dead, processed when all
// are done, processing otherwise.
Status SettleRow(Db& db, int64_t inbox_id, const std::string& now) {
  HOOKBOX_PREPARE(up, db,
                  "UPDATE inbox SET"
                  " status = CASE"
                  "   WHEN EXISTS (SELECT 1 FROM jobs WHERE inbox_id = ?1 AND status = 'dead')"
                  "     THEN 'dead'"
                  "   WHEN NOT EXISTS (SELECT 1 FROM jobs WHERE inbox_id = ?1 AND status != 'done')"
                  "     THEN 'processed'"
                  "   ELSE 'processing' END,"
                  " processed_at = CASE"
                  "   WHEN NOT EXISTS (SELECT 1 FROM jobs WHERE inbox_id = ?1 AND status != 'done')"
                  "     THEN ?2 ELSE NULL END"
                  " WHERE id = ?1");
  up.Bind(1, inbox_id).Bind(2, now);
  return up.Run();
}

// The finishing transaction's body: compare-and-swap on the lease token, then the
// attempt's record, the sql handler's statements, and the row's status.
Status FinishInto(Db& db, const ClaimedJob& job, const JobOutcome& outcome, const SqlWork* sql,
                  const JobOutcome* sql_failed, Outcome* recorded) {
  const JobOutcome* effective = &outcome;
  JobOutcome failed;
  Status s;
  if (sql && outcome.outcome == Outcome::kOk) {
    (void)db.Exec("SAVEPOINT sql_handler");
    for (const std::string& statement : sql->statements) {
      auto q = db.Prepare(statement);
      if (!q.ok()) {
        s = q.status();
        break;
      }
      BindEventParams(**q, job.event);
      if (s = (*q)->Run(); !s.ok()) break;
    }
    if (!s.ok()) {
      if (!db.InTransaction()) return s;  // SQLite gave up the whole transaction
      (void)db.Exec("ROLLBACK TO sql_handler");
      failed = SqlFailedOutcome(outcome, sql_failed, s);
      effective = &failed;
      s = Status::Ok();
    }
    (void)db.Exec("RELEASE sql_handler");
  }

  const std::string finished = FormatTime(effective->finished_at);
  {
    HOOKBOX_PREPARE(cas, db,
                    "UPDATE jobs SET status = ?1, next_attempt_at = coalesce(?2, next_attempt_at),"
                    " last_error = ?3, attempts = max(attempts - ?6, 0), lease_owner = NULL,"
                    " lease_token = NULL, lease_until = NULL"
                    " WHERE id = ?4 AND lease_token = ?5 AND status = 'processing'");
    cas.Bind(1, JobStatusFor(effective->next));
    if (effective->next == JobOutcome::Next::kRetry) {
      cas.Bind(2, FormatTime(effective->next_attempt_at));
    }
    if (effective->outcome != Outcome::kOk) cas.Bind(3, StorableText(effective->detail));
    cas.Bind(4, job.job_id).Bind(5, job.lease_token);
    cas.Bind(6, int64_t{effective->refund_try ? 1 : 0});
    if (s = cas.Run(); !s.ok()) return s;
  }
  if (db.Changes() == 0) {
    return LeaseLost(job);
  }
  {
    HOOKBOX_PREPARE(att, db,
                    "UPDATE attempts SET finished_at = ?, outcome = ?, detail = ?"
                    " WHERE job = ? AND number = ?");
    att.Bind(1, finished).Bind(2, OutcomeName(effective->outcome));
    att.Bind(3, StorableText(effective->detail));
    att.Bind(4, job.job_id).Bind(5, int64_t{job.event.attempt});
    if (s = att.Run(); !s.ok()) return s;
  }
  *recorded = effective->outcome;
  return SettleRow(db, job.inbox_id, finished);
}

// The columns a claim reads: the job, and the stored event its handler gets.
constexpr const char* kClaimColumns =
    "j.id, j.inbox_id, j.handler, j.attempts, i.endpoint, i.event_id, i.event_type,"
    " i.resource_id, i.sequence, i.body, i.headers, i.received_at,"
    " (SELECT count(*) FROM attempts a WHERE a.job = j.id), j.generation";

ClaimedJob ReadClaim(sqlite::Stmt& q) {
  ClaimedJob c;
  c.job_id = q.Int(0);
  c.inbox_id = q.Int(1);
  c.handler = q.Text(2);
  c.budget_used = static_cast<int>(q.Int(3)) + 1;
  c.event.endpoint = q.Text(4);
  c.event.event_id = q.Text(5);
  c.event.event_type = q.Text(6);
  c.event.resource_id = q.Text(7);
  c.event.sequence = q.Text(8);
  c.event.body = q.Text(9);
  c.event.headers_json = q.Text(10);
  c.event.received_at = q.Text(11);
  c.event.attempt = static_cast<int>(q.Int(12)) + 1;
  c.event.generation = static_cast<int>(q.Int(13));
  c.lease_token = NewLeaseToken();
  return c;
}

// Gives each selected job to `owner`: a new lease token, lease_until, attempts + 1, an open
// attempts row; an attempt abandoned by a dead worker is marked as such.
Status LeaseJobs(Db& db, const std::vector<ClaimedJob>& jobs, const std::string& owner,
                 TimePoint now, std::chrono::milliseconds lease) {
  if (jobs.empty()) return Status::Ok();
  const std::string now_text = FormatTime(now);
  const std::string until = FormatTime(now + lease);
  Status s;
  HOOKBOX_PREPARE(abandon, db,
                  "UPDATE attempts SET detail = 'abandoned: the lease ran out (worker stopped"
                  " or died)' WHERE job = ? AND finished_at IS NULL");
  HOOKBOX_PREPARE(lease_up, db,
                  "UPDATE jobs SET status = 'processing', attempts = attempts + 1,"
                  " lease_owner = ?, lease_token = ?, lease_until = ? WHERE id = ?");
  HOOKBOX_PREPARE(att, db,
                  "INSERT INTO attempts (job, number, started_at, generation) VALUES (?, ?, ?, ?)");
  HOOKBOX_PREPARE(row, db,
                  "UPDATE inbox SET status = 'processing' WHERE id = ? AND status = 'pending'");
  for (const ClaimedJob& c : jobs) {
    abandon.Bind(1, c.job_id);
    if (s = abandon.Run(); !s.ok()) return s;
    abandon.Reset();
    lease_up.Bind(1, owner).Bind(2, c.lease_token).Bind(3, until).Bind(4, c.job_id);
    if (s = lease_up.Run(); !s.ok()) return s;
    lease_up.Reset();
    att.Bind(1, c.job_id).Bind(2, int64_t{c.event.attempt}).Bind(3, now_text);
    att.Bind(4, int64_t{c.event.generation});
    if (s = att.Run(); !s.ok()) return s;
    att.Reset();
    row.Bind(1, c.inbox_id);
    if (s = row.Run(); !s.ok()) return s;
    row.Reset();
  }
  return Status::Ok();
}

// Due jobs that head their resource's queue: no earlier unfinished job of the same
// (endpoint, resource), and no live lease on any of its jobs. Sync jobs are the producer's
// to retry, not the pool's. A job is due in one of two ways (pending and its time has come,
// or processing and its lease ran out); each way is one query that walks jobs_due in
// (next_attempt_at, id) order and stops after `max` claimable jobs, and the two lists are
// merged in that order. As a single query with an OR, SQLite gathered and sorted every due
// job at every claim: a backlog made each claim, a write in the group commit that also
// runs the accepts, slower the longer the backlog grew.
//
// `handlers` (handler state): with `only` false, jobs of these (endpoint, handler) pairs
// are left out; with `only` true, the list is one pair and only its jobs are taken. With
// no pairs and `only` false, the query is the plain one (the hot path's plan unchanged).
Status DueInto(Db& db, const std::string& now_text, int max,
               const std::vector<std::pair<std::string, std::string>>& handlers, bool only,
               std::vector<std::pair<std::string, ClaimedJob>>* due) {
  static const std::string kHeadsItsResource =
      " AND j.sync = 0"
      " AND (i.resource_id = '' OR NOT EXISTS ("
      "   SELECT 1 FROM inbox i2 JOIN jobs j2 ON j2.inbox_id = i2.id"
      "   WHERE i2.endpoint = i.endpoint AND i2.resource_id = i.resource_id"
      "   AND j2.id != j.id AND j2.status IN ('pending', 'processing')"
      "   AND ((i2.id, j2.id) < (i.id, j.id)"
      "        OR (j2.status = 'processing' AND j2.lease_until >= ?1))))"
      " ORDER BY j.next_attempt_at, j.id LIMIT ?2";
  static const std::string kSelect = std::string("SELECT ") + kClaimColumns +
                                     ", j.next_attempt_at"
                                     " FROM jobs j CROSS JOIN inbox i ON i.id = j.inbox_id";
  std::string which;
  if (only) {
    which = " AND i.endpoint = ?3 AND j.handler = ?4";
  } else if (!handlers.empty()) {
    which = " AND (i.endpoint, j.handler) NOT IN (VALUES ";
    for (size_t k = 0; k < handlers.size(); ++k) {
      which +=
          (k ? ", (?" : "(?") + std::to_string(3 + 2 * k) + ", ?" + std::to_string(4 + 2 * k) + ")";
    }
    which += ")";
  }
  const std::string pending = kSelect + " WHERE j.status = 'pending' AND j.next_attempt_at <= ?1" +
                              which + kHeadsItsResource;
  const std::string expired =
      kSelect + " WHERE j.status = 'processing' AND j.lease_until < ?1" + which + kHeadsItsResource;
  Status s;
  for (const std::string* sql : {&pending, &expired}) {
    HOOKBOX_PREPARE(q, db, *sql);
    q.Bind(1, now_text).Bind(2, int64_t{max});
    for (size_t k = 0; k < handlers.size(); ++k) {
      q.Bind(static_cast<int>(3 + 2 * k), handlers[k].first);
      q.Bind(static_cast<int>(4 + 2 * k), handlers[k].second);
    }
    while (q.Step(&s)) due->emplace_back(q.Text(14), ReadClaim(q));
    if (!s.ok()) return s;
  }
  std::sort(due->begin(), due->end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.job_id) < std::tie(b.first, b.second.job_id);
  });
  if (due->size() > static_cast<size_t>(max)) due->resize(static_cast<size_t>(max));
  return Status::Ok();
}

// ---- Handler state (issue 25; DESIGN.md, "Handler state"; rules in handler_gate.h) ----

constexpr const char* kStateColumns =
    "endpoint, handler, paused, paused_reason, coalesce(paused_at, ''), circuit, failures,"
    " coalesce(open_until, ''), coalesce(probe_until, ''), coalesce(CAST(tokens AS TEXT), ''),"
    " coalesce(refilled_at, '')";

Circuit CircuitFromText(const std::string& text) {
  if (text == "open") return Circuit::kOpen;
  if (text == "half-open") return Circuit::kHalfOpen;
  return Circuit::kClosed;
}

HandlerState ReadState(sqlite::Stmt& q, int first = 0) {
  HandlerState st;
  st.endpoint = q.Text(first);
  st.handler = q.Text(first + 1);
  st.paused = q.Int(first + 2) != 0;
  st.paused_reason = q.Text(first + 3);
  st.paused_at = q.Text(first + 4);
  st.circuit = CircuitFromText(q.Text(first + 5));
  st.failures = q.Int(first + 6);
  st.open_until = q.Text(first + 7);
  st.probe_until = q.Text(first + 8);
  if (std::string t = q.Text(first + 9); !t.empty()) st.tokens = std::strtod(t.c_str(), nullptr);
  st.refilled_at = q.Text(first + 10);
  return st;
}

// The state row of one handler; a default one (running, closed, full) when it has none.
Status LoadState(Db& db, const std::string& endpoint, const std::string& handler,
                 HandlerState* out) {
  HOOKBOX_PREPARE(q, db,
                  std::string("SELECT ") + kStateColumns +
                      " FROM handler_state WHERE endpoint = ? AND handler = ?");
  q.Bind(1, endpoint).Bind(2, handler);
  Status s;
  *out = HandlerState{};
  out->endpoint = endpoint;
  out->handler = handler;
  if (q.Step(&s)) *out = ReadState(q);
  return s;
}

// Writes the whole row (insert or replace).
Status StoreState(Db& db, const HandlerState& st) {
  HOOKBOX_PREPARE(q, db,
                  "INSERT INTO handler_state (endpoint, handler, paused, paused_reason,"
                  " paused_at, circuit, failures, open_until, probe_until, tokens, refilled_at)"
                  " VALUES (?1, ?2, ?3, ?4, nullif(?5, ''), ?6, ?7, nullif(?8, ''),"
                  " nullif(?9, ''), CAST(nullif(?10, '') AS REAL), nullif(?11, ''))"
                  " ON CONFLICT (endpoint, handler) DO UPDATE SET paused = excluded.paused,"
                  " paused_reason = excluded.paused_reason, paused_at = excluded.paused_at,"
                  " circuit = excluded.circuit, failures = excluded.failures,"
                  " open_until = excluded.open_until, probe_until = excluded.probe_until,"
                  " tokens = excluded.tokens, refilled_at = excluded.refilled_at");
  char tokens[64] = "";
  if (st.tokens) std::snprintf(tokens, sizeof tokens, "%.17g", *st.tokens);
  q.Bind(1, st.endpoint).Bind(2, st.handler).Bind(3, int64_t{st.paused ? 1 : 0});
  q.Bind(4, st.paused_reason).Bind(5, st.paused_at).Bind(6, CircuitName(st.circuit));
  q.Bind(7, st.failures).Bind(8, st.open_until).Bind(9, st.probe_until);
  q.Bind(10, std::string_view(tokens)).Bind(11, st.refilled_at);
  return q.Run();
}

// The claim's body. With no handler held (no paused or non-closed row) and no rate, one
// plain due query, as before handler state. Otherwise the held and rated handlers are
// left out of it, and each of those that may run now is claimed apart, at most its budget
// (the writer's transaction: no other claim or pause comes between the look and the take).
Status ClaimInto(Db& db, const std::string& owner, int max, TimePoint now,
                 std::chrono::milliseconds lease, const ClaimLimits& limits,
                 std::vector<ClaimedJob>* out) {
  const std::string now_text = FormatTime(now);
  std::map<std::pair<std::string, std::string>, HandlerState> special;
  Status s;
  {
    HOOKBOX_PREPARE(q, db,
                    std::string("SELECT ") + kStateColumns +
                        " FROM handler_state WHERE paused != 0 OR circuit != 'closed'");
    while (q.Step(&s)) {
      HandlerState st = ReadState(q);
      special.emplace(std::make_pair(st.endpoint, st.handler), std::move(st));
    }
    if (!s.ok()) return s;
  }
  std::map<std::pair<std::string, std::string>, const HandlerRate*> rates;
  for (const HandlerRate& r : limits.rates) rates[{r.endpoint, r.handler}] = &r;
  std::vector<std::pair<std::string, std::string>> apart;
  for (const auto& [key, st] : special) apart.push_back(key);
  for (const auto& [key, rate] : rates) {
    if (!special.count(key)) apart.push_back(key);
  }
  std::sort(apart.begin(), apart.end());

  std::vector<std::pair<std::string, ClaimedJob>> due;
  if (s = DueInto(db, now_text, max, apart, false, &due); !s.ok()) return s;
  for (auto& [at, job] : due) out->push_back(std::move(job));

  for (const auto& key : apart) {
    if (out->size() >= static_cast<size_t>(max)) break;
    auto r = rates.find(key);
    const HandlerRate* rate = r == rates.end() ? nullptr : r->second;
    HandlerState st;
    if (s = LoadState(db, key.first, key.second, &st); !s.ok()) return s;
    const GateDecision d = DecideClaim(st, rate, now);
    const int room = max - static_cast<int>(out->size());
    const int take = d.unlimited ? room : std::min(d.budget, room);
    if (take <= 0) continue;
    std::vector<std::pair<std::string, ClaimedJob>> mine;
    if (s = DueInto(db, now_text, take, {key}, true, &mine); !s.ok()) return s;
    if (mine.empty()) continue;
    auto t = AfterClaim(st, rate, d, static_cast<int>(mine.size()), now, lease);
    if (s = StoreState(db, st); !s.ok()) return s;
    for (auto& [at, job] : mine) {
      if (rate) job.rate_due_at = StateTime(at);
      job.probe = t.has_value();
      out->push_back(std::move(job));
    }
  }
  return LeaseJobs(db, *out, owner, now, lease);
}

// The event's unfinished jobs for a sync request: all of them if none is leased to someone
// else.
Status ClaimEventInto(Db& db, int64_t inbox_id, const std::string& owner, TimePoint now,
                      std::chrono::milliseconds lease, EventClaim* out) {
  Status s;
  const std::string now_text = FormatTime(now);
  {
    HOOKBOX_PREPARE(busy, db,
                    "SELECT count(*) FROM jobs WHERE inbox_id = ? AND status = 'processing'"
                    " AND lease_until >= ?");
    busy.Bind(1, inbox_id).Bind(2, now_text);
    if (busy.Step(&s) && busy.Int(0) > 0) {
      out->state = EventClaim::State::kBusy;
      return Status::Ok();
    }
    if (!s.ok()) return s;
  }
  {
    HOOKBOX_PREPARE(q, db,
                    std::string("SELECT ") + kClaimColumns +
                        " FROM jobs j JOIN inbox i ON i.id = j.inbox_id WHERE j.inbox_id = ?"
                        " AND j.status IN ('pending', 'processing') ORDER BY j.id");
    q.Bind(1, inbox_id);
    while (q.Step(&s)) out->jobs.push_back(ReadClaim(q));
    if (!s.ok()) return s;
  }
  out->state = out->jobs.empty() ? EventClaim::State::kSettled : EventClaim::State::kClaimed;
  return LeaseJobs(db, out->jobs, owner, now, lease);
}

// mode: sync, sql handlers: their statements run in the accept transaction, and their jobs
// are recorded done with one ok attempt.
Status RunSyncSql(Db& db, const Event& e, int64_t inbox_id, const std::string& now) {
  HandlerEvent he;
  he.endpoint = e.endpoint;
  he.event_id = e.event_id;
  he.event_type = e.event_type;
  he.resource_id = e.resource_id;
  he.sequence = e.sequence;
  he.body = e.body;
  he.received_at = now;
  Status s;
  for (const auto& [handler, work] : e.sync_sql) {
    for (const std::string& statement : work->statements) {
      auto q = db.Prepare(statement);
      if (!q.ok()) return Status::Internal("sql handler failed", q.status().ToString());
      BindEventParams(**q, he);
      if (s = (*q)->Run(); !s.ok()) {
        if (s.code() == Status::Code::kUnavailable) return s;
        return Status::Internal("sql handler failed", s.ToString());
      }
    }
    HOOKBOX_PREPARE(
        done, db,
        "UPDATE jobs SET status = 'done', attempts = 1 WHERE inbox_id = ? AND handler = ?"
        " RETURNING id");
    done.Bind(1, inbox_id).Bind(2, handler);
    int64_t job_id = 0;
    if (done.Step(&s)) job_id = done.Int(0);
    if (!s.ok()) return s;
    done.Reset();
    HOOKBOX_PREPARE(att, db,
                    "INSERT INTO attempts (job, number, started_at, finished_at, outcome, detail)"
                    " VALUES (?, 1, ?, ?, 'ok', 'sql: ran in the accept transaction')");
    att.Bind(1, job_id).Bind(2, now).Bind(3, now);
    if (s = att.Run(); !s.ok()) return s;
  }
  return SettleRow(db, inbox_id, now);
}

// Sequence gate: lower than the last accepted sequence of the resource is *stale; equal is
// not (second-resolution timestamps tie, and a redelivery after `inbox clear` must run).
Status IsStale(Db& db, const Event& e, bool* stale) {
  HOOKBOX_PREPARE(q, db,
                  "SELECT last_sequence FROM sequences WHERE endpoint = ? AND resource_id = ?");
  q.Bind(1, e.endpoint).Bind(2, e.resource_id);
  Status s;
  if (q.Step(&s)) *stale = *e.sequence_key < q.Int(0);
  return s;
}

// dedupe: [id, body]. A stored row with this id makes it that row's duplicate (counted by
// the insert's path); else the first stored row with the same body does (*duplicate), and
// nothing is inserted. The one writer runs accepts one after another (each sees the ones
// before it in its group), so no other accept comes between this read and the insert.
Status BodyDuplicate(Db& db, const Event& e, const std::string& now, AcceptResult* out,
                     bool* duplicate) {
  HOOKBOX_PREPARE(q, db,
                  "SELECT event_id FROM inbox WHERE endpoint = ?1 AND body_sha256 = ?2"
                  " AND NOT EXISTS (SELECT 1 FROM inbox WHERE endpoint = ?1 AND event_id = ?3)"
                  " ORDER BY id LIMIT 1");
  q.Bind(1, e.endpoint).Bind(2, e.body_sha256).Bind(3, e.event_id);
  Status s;
  std::optional<std::string> original;
  if (q.Step(&s)) original = q.Text(0);
  if (!s.ok() || !original) return s;
  *duplicate = true;
  out->verdict = Verdict::kDuplicate;
  out->duplicate_of = *original;
  HOOKBOX_PREPARE(up, db,
                  "UPDATE inbox SET duplicates = duplicates + 1, last_duplicate_at = ?"
                  " WHERE endpoint = ? AND event_id = ?");
  up.Bind(1, now).Bind(2, e.endpoint).Bind(3, *original);
  return up.Run();
}

// The row, unless one with its id is stored (then db.Changes() is 0).
Status InsertRow(Db& db, const Event& e, const char* status, const std::string& now) {
  HOOKBOX_PREPARE(ins, db,
                  "INSERT INTO inbox (endpoint, event_id, id_source, event_type, resource_id,"
                  " sequence, sequence_key, body_sha256, headers, body, status, received_at)"
                  " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
                  " ON CONFLICT (endpoint, event_id) DO NOTHING");
  ins.Bind(1, e.endpoint).Bind(2, e.event_id).Bind(3, e.id_source).Bind(4, e.event_type);
  ins.Bind(5, e.resource_id).Bind(6, e.sequence).Bind(7, e.sequence_key);
  ins.Bind(8, e.body_sha256).Bind(9, e.headers_json).BindBlob(10, e.body);
  ins.Bind(11, status).Bind(12, now);
  return ins.Run();
}

// A duplicate: counted on the original row, unless strict_body refuses another body. The
// gate is not consulted or advanced.
Status CountDuplicate(Db& db, const Event& e, const std::string& now, AcceptResult* out) {
  HOOKBOX_PREPARE(q, db, "SELECT body_sha256 FROM inbox WHERE endpoint = ? AND event_id = ?");
  q.Bind(1, e.endpoint).Bind(2, e.event_id);
  Status s;
  std::string stored;
  if (q.Step(&s)) stored = q.Text(0);
  if (!s.ok()) return s;
  out->verdict = Verdict::kDuplicate;
  out->body_changed = stored != e.body_sha256;
  if (out->body_changed && e.strict_body) {
    return Status::Conflict("event id already stored with another body", e.event_id);
  }
  HOOKBOX_PREPARE(up, db,
                  "UPDATE inbox SET duplicates = duplicates + 1, last_duplicate_at = ?"
                  " WHERE endpoint = ? AND event_id = ?");
  up.Bind(1, now).Bind(2, e.endpoint).Bind(3, e.event_id);
  return up.Run();
}

Status AdvanceSequence(Db& db, const Event& e, const std::string& now) {
  HOOKBOX_PREPARE(up, db,
                  "INSERT INTO sequences (endpoint, resource_id, last_sequence, last_event_id,"
                  " updated_at) VALUES (?,?,?,?,?) ON CONFLICT (endpoint, resource_id) DO UPDATE"
                  " SET last_sequence = excluded.last_sequence,"
                  " last_event_id = excluded.last_event_id, updated_at = excluded.updated_at");
  up.Bind(1, e.endpoint).Bind(2, e.resource_id).Bind(3, *e.sequence_key);
  up.Bind(4, e.event_id).Bind(5, now);
  return up.Run();
}

// The accepted row's jobs, in handler order; on a sync endpoint, its sql handlers' work and
// the claim of the rest for the request.
Status AddJobs(Db& db, const Event& e, int64_t inbox_id, const std::string& now,
               AcceptResult* out) {
  const bool sync = !e.sync_owner.empty();
  Status s;
  {
    HOOKBOX_PREPARE(job, db,
                    "INSERT INTO jobs (inbox_id, handler, status, next_attempt_at, sync)"
                    " VALUES (?, ?, 'pending', ?, ?)");
    for (const std::string& handler : e.handlers) {
      job.Bind(1, inbox_id).Bind(2, handler).Bind(3, now).Bind(4, int64_t{sync});
      if (s = job.Run(); !s.ok()) return s;
      job.Reset();
    }
  }
  out->verdict = Verdict::kAccepted;
  if (!sync) return Status::Ok();
  if (!e.sync_sql.empty()) {
    if (s = RunSyncSql(db, e, inbox_id, now); !s.ok()) return s;
  }
  EventClaim claim;
  if (s = ClaimEventInto(db, inbox_id, e.sync_owner, e.received_at, e.sync_lease, &claim);
      !s.ok()) {
    return s;
  }
  out->claimed = std::move(claim.jobs);
  return Status::Ok();
}

// The accept transaction's body, run inside the writer's SAVEPOINT for this event.
Status AcceptInto(Db& db, const Event& e, AcceptResult* out) {
  Status s;
  const std::string now = FormatTime(e.received_at);
  const bool gated = !e.resource_id.empty() && e.sequence_key.has_value();
  bool stale = false;
  if (gated) {
    if (s = IsStale(db, e, &stale); !s.ok()) return s;
  }
  if (e.dedupe_body) {
    bool duplicate = false;
    if (s = BodyDuplicate(db, e, now, out, &duplicate); !s.ok() || duplicate) return s;
  }
  const char* status = stale ? "stale" : e.handlers.empty() ? "ignored" : "pending";
  if (s = InsertRow(db, e, status, now); !s.ok()) return s;
  if (db.Changes() == 0) return CountDuplicate(db, e, now, out);

  const int64_t inbox_id = db.LastInsertId();
  if (stale) {
    out->verdict = Verdict::kStale;
    return Status::Ok();
  }
  if (gated) {
    if (s = AdvanceSequence(db, e, now); !s.ok()) return s;
  }
  if (e.handlers.empty()) {
    out->verdict = Verdict::kIgnored;
    return Status::Ok();
  }
  return AddJobs(db, e, inbox_id, now, out);
}

InboxRow ReadRow(sqlite::Stmt& q) {
  InboxRow r;
  r.id = q.Int(0);
  r.endpoint = q.Text(1);
  r.event_id = q.Text(2);
  r.id_source = q.Text(3);
  r.event_type = q.Text(4);
  r.resource_id = q.Text(5);
  r.sequence = q.Text(6);
  r.body_sha256 = q.Text(7);
  r.headers_json = q.Text(8);
  r.status = q.Text(9);
  r.received_at = q.Text(10);
  r.processed_at = q.Text(11);
  r.duplicates = q.Int(12);
  r.last_duplicate_at = q.Text(13);
  return r;
}

constexpr const char* kRowColumns =
    "id, endpoint, event_id, id_source, event_type, resource_id, sequence, body_sha256,"
    " headers, status, received_at, processed_at, duplicates, last_duplicate_at";

class SqliteInbox final : public Inbox {
 public:
  SqliteInbox(std::unique_ptr<Db> writer, std::unique_ptr<Db> reader,
              std::unique_ptr<Db> checkpointer)
      : writer_db_(std::move(writer)),
        reader_(std::move(reader)),
        wal_path_(sqlite3_filename_wal(sqlite3_db_filename(writer_db_->raw(), "main"))),
        checkpoint_db_(std::move(checkpointer)) {
    // Replaces SQLite's automatic checkpoint (see OnWalCommit).
    sqlite3_wal_hook(writer_db_->raw(), &SqliteInbox::OnWalCommit, this);
    checkpointer_ = std::thread([this] { CheckpointLoop(); });
  }

  ~SqliteInbox() override {
    {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_stopping_ = true;
    }
    checkpoint_cv_.notify_one();
    checkpointer_.join();
  }

  StatusOr<AcceptResult> Accept(const Event& event) override {
    AcceptResult result;
    result.verdict = Verdict::kAccepted;
    Status s = Write([&](Db& db) { return AcceptInto(db, event, &result); });
    if (!s.ok()) return s;
    return result;
  }

  Status Clear(const std::string& endpoint, const std::string& event_id, TimePoint now) override {
    return Write([&](Db& db) -> Status {
      Status s;
      {
        // In the writer's transaction: no claim can come between this look and the delete.
        HOOKBOX_PREPARE(running, db,
                        "SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                        " WHERE i.endpoint = ? AND i.event_id = ? AND j.status = 'processing'"
                        " AND j.lease_until >= ?");
        running.Bind(1, endpoint).Bind(2, event_id).Bind(3, FormatTime(now));
        if (running.Step(&s) && running.Int(0) > 0) return ClearRefused(endpoint, event_id);
        if (!s.ok()) return s;
      }
      // Jobs and attempts go with the row (ON DELETE CASCADE).
      HOOKBOX_PREPARE(del, db, "DELETE FROM inbox WHERE endpoint = ? AND event_id = ?");
      del.Bind(1, endpoint).Bind(2, event_id);
      s = del.Run();
      if (s.ok() && db.Changes() == 0) {
        return Status::NotFound("no such event", endpoint + " " + event_id);
      }
      return s;
    });
  }

  using Inbox::ClaimJobs;
  StatusOr<std::vector<ClaimedJob>> ClaimJobs(const std::string& owner, int max, TimePoint now,
                                              std::chrono::milliseconds lease,
                                              const ClaimLimits& limits) override {
    std::vector<ClaimedJob> claimed;
    Status s = Write([&](Db& db) {
      claimed.clear();
      return ClaimInto(db, owner, max, now, lease, limits, &claimed);
    });
    if (!s.ok()) return s;
    return claimed;
  }

  // ---- Handler state (issue 25): the operator's pause, `handler list`, the circuit ----

  StatusOr<int64_t> SetPaused(const std::vector<HandlerRef>& handlers, bool paused,
                              const std::string& reason, TimePoint now) override {
    int64_t changed = 0;
    Status s = Write([&](Db& db) -> Status {
      changed = 0;
      for (const HandlerRef& ref : handlers) {
        HandlerState st;
        if (Status l = LoadState(db, ref.endpoint, ref.handler, &st); !l.ok()) return l;
        if (!ApplyPause(st, paused, reason, now)) continue;
        if (Status w = StoreState(db, st); !w.ok()) return w;
        ++changed;
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return changed;
  }

  StatusOr<std::vector<HandlerStatus>> Handlers(TimePoint now, bool count_jobs) override {
    std::lock_guard lock(read_mu_);
    std::map<std::pair<std::string, std::string>, HandlerStatus> by;
    Status s;
    {
      HOOKBOX_PREPARE(q, *reader_, std::string("SELECT ") + kStateColumns + " FROM handler_state");
      while (q.Step(&s)) {
        HandlerState st = ReadState(q);
        by[{st.endpoint, st.handler}].state = std::move(st);
      }
      if (!s.ok()) return s;
    }
    if (count_jobs) {
      HOOKBOX_PREPARE(q, *reader_,
                      "SELECT i.endpoint, j.handler,"
                      " sum(j.status = 'pending' AND j.next_attempt_at > ?1),"
                      " sum(j.status = 'pending' AND j.next_attempt_at <= ?1),"
                      " sum(j.status = 'processing'), sum(j.status = 'dead')"
                      " FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                      " WHERE j.status IN ('pending', 'processing', 'dead')"
                      " GROUP BY i.endpoint, j.handler");
      q.Bind(1, FormatTime(now));
      while (q.Step(&s)) {
        HandlerStatus& h = by[{q.Text(0), q.Text(1)}];
        h.pending = q.Int(2);
        h.due = q.Int(3);
        h.running = q.Int(4);
        h.dead = q.Int(5);
      }
      if (!s.ok()) return s;
    }
    std::vector<HandlerStatus> out;
    for (auto& [key, h] : by) {
      h.state.endpoint = key.first;
      h.state.handler = key.second;
      out.push_back(std::move(h));
    }
    return out;
  }

  StatusOr<std::optional<CircuitTransition>> RecordCircuit(const HandlerRef& handler,
                                                           Outcome outcome,
                                                           const CircuitLimit& limit,
                                                           TimePoint now) override {
    std::optional<CircuitTransition> t;
    Status s = Write([&](Db& db) -> Status {
      HandlerState st;
      if (Status l = LoadState(db, handler.endpoint, handler.handler, &st); !l.ok()) return l;
      const HandlerState before = st;
      t = ApplyOutcome(st, outcome, limit, now);
      if (!t && st.failures == before.failures && st.probe_until == before.probe_until) {
        return Status::Ok();  // nothing to write (the common ok of a closed circuit)
      }
      return StoreState(db, st);
    });
    if (!s.ok()) return s;
    return t;
  }

  StatusOr<Outcome> FinishJob(const ClaimedJob& job, const JobOutcome& outcome, const SqlWork* sql,
                              const JobOutcome* sql_failed) override {
    Outcome recorded = outcome.outcome;
    Status s =
        Write([&](Db& db) { return FinishInto(db, job, outcome, sql, sql_failed, &recorded); });
    if (!s.ok()) return s;
    return recorded;
  }

  std::vector<StatusOr<Outcome>> FinishJobs(const std::vector<FinishRequest>& finishes) override {
    std::vector<StatusOr<Outcome>> results(finishes.size(), Status::Internal("not finished"));
    Status s = Write([&](Db& db) -> Status {
      for (size_t i = 0; i < finishes.size(); ++i) {
        const FinishRequest& f = finishes[i];
        Outcome recorded = f.outcome.outcome;
        (void)RunCached(db, kFinishSavepoint);
        Status one =
            FinishInto(db, *f.job, f.outcome, f.sql, f.sql ? &f.sql_failed : nullptr, &recorded);
        if (!one.ok() && !db.InTransaction()) return one;  // the whole group is lost
        if (!one.ok()) (void)RunCached(db, kFinishRollbackTo);
        (void)RunCached(db, kFinishRelease);
        if (one.ok())
          results[i] = recorded;
        else
          results[i] = one;
      }
      return Status::Ok();
    });
    if (!s.ok()) std::fill(results.begin(), results.end(), StatusOr<Outcome>(s));
    return results;
  }

  StatusOr<EventClaim> ClaimEvent(const std::string& endpoint, const std::string& event_id,
                                  const std::string& owner, TimePoint now,
                                  std::chrono::milliseconds lease) override {
    EventClaim claim;
    Status s = Write([&](Db& db) -> Status {
      Status st;
      int64_t inbox_id = 0;
      {
        HOOKBOX_PREPARE(q, db, "SELECT id, status FROM inbox WHERE endpoint = ? AND event_id = ?");
        q.Bind(1, endpoint).Bind(2, event_id);
        if (!q.Step(&st)) {
          if (!st.ok()) return st;
          return Status::NotFound("no such event", endpoint + " " + event_id);
        }
        inbox_id = q.Int(0);
        claim.row_status = q.Text(1);
      }
      return ClaimEventInto(db, inbox_id, owner, now, lease, &claim);
    });
    if (!s.ok()) return s;
    return claim;
  }

  Status RenewLeases(std::span<const ClaimedJob> jobs, TimePoint now,
                     std::chrono::milliseconds lease) override {
    if (jobs.empty()) return Status::Ok();
    return Write([&](Db& db) -> Status {
      HOOKBOX_PREPARE(up, db,
                      "UPDATE jobs SET lease_until = ? WHERE id = ? AND lease_token = ?"
                      " AND status = 'processing'");
      const std::string until = FormatTime(now + lease);
      for (const ClaimedJob& job : jobs) {
        up.Bind(1, until).Bind(2, job.job_id).Bind(3, job.lease_token);
        if (Status s = up.Run(); !s.ok()) return s;
        up.Reset();
        // The write's savepoint rolls back the jobs renewed before this one.
        if (db.Changes() == 0) return LeaseLost(job);
      }
      return Status::Ok();
    });
  }

  StatusOr<int> Retry(const std::string& endpoint, const std::string& event_id,
                      TimePoint now) override {
    int rearmed = 0;
    Status s = Write([&](Db& db) -> Status {
      Status st;
      int64_t inbox_id = 0;
      {
        HOOKBOX_PREPARE(q, db, "SELECT id FROM inbox WHERE endpoint = ? AND event_id = ?");
        q.Bind(1, endpoint).Bind(2, event_id);
        if (!q.Step(&st)) {
          if (!st.ok()) return st;
          return Status::NotFound("no such event", endpoint + " " + event_id);
        }
        inbox_id = q.Int(0);
      }
      HOOKBOX_PREPARE(up, db,
                      "UPDATE jobs SET status = 'pending', attempts = 0, next_attempt_at = ?,"
                      " sync = 0 WHERE inbox_id = ? AND status = 'dead'");
      up.Bind(1, FormatTime(now)).Bind(2, inbox_id);
      if (st = up.Run(); !st.ok()) return st;
      rearmed = static_cast<int>(db.Changes());
      if (rearmed == 0) {
        return Status::InvalidArgument("no dead job to retry", endpoint + " " + event_id);
      }
      HOOKBOX_PREPARE(row, db,
                      "UPDATE inbox SET status = 'pending', processed_at = NULL WHERE id = ?");
      row.Bind(1, inbox_id);
      return row.Run();
    });
    if (!s.ok()) return s;
    return rearmed;
  }

  // ---- The bulk verbs (inbox.h, BulkRequest).
  StatusOr<BulkPlan> PlanBulk(const BulkRequest& r) override {
    if (Status s = CheckBulk(r); !s.ok()) return s;
    std::lock_guard lock(read_mu_);
    Db& db = *reader_;
    // One read transaction: the counts as of one moment.
    if (Status s = db.Exec("BEGIN"); !s.ok()) return s;
    auto plan = PlanLocked(db, r);
    (void)db.Exec("COMMIT");
    return plan;
  }

  StatusOr<int64_t> RetryDead(const BulkRequest& r) override { return ActBulk(r); }
  StatusOr<int64_t> Replay(const BulkRequest& r) override { return ActBulk(r); }

  Status HoldForHandler(const std::vector<ClaimedJob>& jobs, TimePoint /*now*/) override {
    return Write([&](Db& db) -> Status {
      Status st;
      HOOKBOX_PREPARE(hold, db,
                      "UPDATE jobs SET status = 'pending', attempts = max(attempts - 1, 0),"
                      " next_attempt_at = ?1, last_error = ?2, lease_owner = NULL,"
                      " lease_token = NULL, lease_until = NULL"
                      " WHERE id = ?3 AND lease_token = ?4 AND status = 'processing'");
      HOOKBOX_PREPARE(unlog, db, "DELETE FROM attempts WHERE job = ? AND number = ?");
      for (const ClaimedJob& job : jobs) {
        hold.Bind(1, std::string(kHeldUntil)).Bind(2, HeldReason(job.handler));
        hold.Bind(3, job.job_id).Bind(4, job.lease_token);
        if (st = hold.Run(); !st.ok()) return st;
        hold.Reset();
        if (db.Changes() == 0) continue;  // lease lost: its new owner decides
        unlog.Bind(1, job.job_id).Bind(2, int64_t{job.event.attempt});
        if (st = unlog.Run(); !st.ok()) return st;
        unlog.Reset();
      }
      return Status::Ok();
    });
  }

  StatusOr<int64_t> ReleaseHeld(const std::vector<HandlerRef>& handlers, TimePoint now) override {
    int64_t released = 0;
    Status s = Write([&](Db& db) -> Status {
      released = 0;
      HOOKBOX_PREPARE(up, db,
                      "UPDATE jobs SET next_attempt_at = ?1, last_error = NULL"
                      " WHERE status = 'pending' AND next_attempt_at = ?2 AND handler = ?3"
                      " AND EXISTS (SELECT 1 FROM inbox i WHERE i.id = jobs.inbox_id"
                      "   AND i.endpoint = ?4)");
      for (const HandlerRef& h : handlers) {
        up.Bind(1, FormatTime(now)).Bind(2, std::string(kHeldUntil));
        up.Bind(3, h.handler).Bind(4, h.endpoint);
        if (Status st = up.Run(); !st.ok()) return st;
        up.Reset();
        released += db.Changes();
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return released;
  }

  StatusOr<std::vector<HandlerBacklog>> UnfinishedByHandler() override {
    std::lock_guard lock(read_mu_);
    HOOKBOX_PREPARE(q, *reader_,
                    "SELECT i.endpoint, j.handler, count(*), sum(j.next_attempt_at = ?)"
                    " FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                    " WHERE j.status IN ('pending', 'processing')"
                    " GROUP BY i.endpoint, j.handler ORDER BY i.endpoint, j.handler");
    q.Bind(1, std::string(kHeldUntil));
    std::vector<HandlerBacklog> backlog;
    Status s;
    while (q.Step(&s)) backlog.push_back({q.Text(0), q.Text(1), q.Int(2), q.Int(3)});
    if (!s.ok()) return s;
    return backlog;
  }

  StatusOr<ReassignCounts> Reassign(const std::string& endpoint, const std::string& from,
                                    const std::string& to, TimePoint now) override {
    ReassignCounts counts;
    Status s = Write([&](Db& db) -> Status {
      counts = {};
      Status st;
      HOOKBOX_PREPARE(move, db,
                      "UPDATE jobs SET handler = ?1,"
                      " last_error = CASE WHEN next_attempt_at = ?2 THEN NULL ELSE last_error END,"
                      " next_attempt_at = CASE WHEN next_attempt_at = ?2 THEN ?3"
                      "   ELSE next_attempt_at END"
                      " WHERE handler = ?4 AND status IN ('pending', 'dead')"
                      " AND EXISTS (SELECT 1 FROM inbox i WHERE i.id = jobs.inbox_id"
                      "   AND i.endpoint = ?5)"
                      " AND NOT EXISTS (SELECT 1 FROM jobs j2"
                      "   WHERE j2.inbox_id = jobs.inbox_id AND j2.handler = ?1)");
      move.Bind(1, to).Bind(2, std::string(kHeldUntil)).Bind(3, FormatTime(now));
      move.Bind(4, from).Bind(5, endpoint);
      if (st = move.Run(); !st.ok()) return st;
      counts.moved = db.Changes();
      HOOKBOX_PREPARE(kept, db,
                      "SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                      " WHERE i.endpoint = ? AND j.handler = ? AND j.status != 'done'");
      kept.Bind(1, endpoint).Bind(2, from);
      if (kept.Step(&st)) counts.kept = kept.Int(0);
      return st;
    });
    if (!s.ok()) return s;
    return counts;
  }

  StatusOr<int64_t> DropJobs(const std::string& endpoint, const std::string& handler,
                             TimePoint now) override {
    int64_t dropped = 0;
    Status s = Write([&](Db& db) -> Status {
      Status st;
      std::vector<int64_t> rows;
      {
        HOOKBOX_PREPARE(
            q, db,
            "SELECT DISTINCT j.inbox_id FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
            " WHERE i.endpoint = ? AND j.handler = ? AND j.status IN ('pending', 'dead')");
        q.Bind(1, endpoint).Bind(2, handler);
        while (q.Step(&st)) rows.push_back(q.Int(0));
        if (!st.ok()) return st;
      }
      HOOKBOX_PREPARE(del, db,
                      "DELETE FROM jobs WHERE inbox_id = ? AND handler = ?"
                      " AND status IN ('pending', 'dead')");
      dropped = 0;
      const std::string at = FormatTime(now);
      for (int64_t id : rows) {
        del.Bind(1, id).Bind(2, handler);
        if (st = del.Run(); !st.ok()) return st;
        del.Reset();
        dropped += db.Changes();
        if (st = SettleRow(db, id, at); !st.ok()) return st;
      }
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return dropped;
  }

  StatusOr<std::vector<std::string>> LeaseOwners() override {
    std::lock_guard lock(read_mu_);
    HOOKBOX_PREPARE(q, *reader_,
                    "SELECT DISTINCT lease_owner FROM jobs WHERE status = 'processing'"
                    " AND lease_owner IS NOT NULL");
    std::vector<std::string> owners;
    Status s;
    while (q.Step(&s)) owners.push_back(q.Text(0));
    if (!s.ok()) return s;
    return owners;
  }

  Status ExpireLeases(const std::string& owner_prefix, TimePoint now) override {
    return Write([&](Db& db) -> Status {
      HOOKBOX_PREPARE(up, db,
                      "UPDATE jobs SET lease_until = ? WHERE status = 'processing'"
                      " AND substr(lease_owner, 1, length(?2)) = ?2");
      up.Bind(1, FormatTime(now - std::chrono::milliseconds(1))).Bind(2, owner_prefix);
      return up.Run();
    });
  }

  Status PrepareSql(const SqlWork& sql) override {
    return Write([&](Db& db) -> Status {
      for (const std::string& statement : sql.setup) {
        if (Status s = db.Exec(statement.c_str()); !s.ok()) return s;
      }
      for (const std::string& statement : sql.statements) {
        auto q = db.Prepare(statement);
        if (!q.ok()) return q.status();
      }
      return Status::Ok();
    });
  }

  StatusOr<std::vector<InboxRow>> List(const ListFilter& f) override {
    std::lock_guard lock(read_mu_);
    std::vector<SqlValue> params;
    HOOKBOX_PREPARE(
        q, *reader_,
        std::string("SELECT ") + kRowColumns + ListQueryTail(f, SqlDialect::kSqlite, &params));
    for (size_t i = 0; i < params.size(); ++i) {
      std::visit([&](const auto& v) { q.Bind(static_cast<int>(i + 1), v); }, params[i]);
    }
    std::vector<InboxRow> rows;
    Status s;
    while (q.Step(&s)) rows.push_back(ReadRow(q));
    if (!s.ok()) return s;
    return rows;
  }

  StatusOr<std::vector<DeadJob>> DeadJobs(int64_t before_job_id, int limit) override {
    std::lock_guard lock(read_mu_);
    HOOKBOX_PREPARE(q, *reader_,
                    std::string("SELECT ") + kRowColumns +
                        ", job_id, handler, coalesce(last_error, ''), attempts FROM inbox JOIN"
                        " (SELECT id AS job_id, inbox_id, handler, last_error, attempts FROM jobs"
                        " WHERE status = 'dead' AND (?1 = 0 OR id < ?1)) ON inbox_id = inbox.id"
                        " ORDER BY job_id DESC LIMIT ?2");
    q.Bind(1, before_job_id).Bind(2, int64_t{limit});
    std::vector<DeadJob> dead;
    Status s;
    while (q.Step(&s)) {
      dead.push_back({ReadRow(q), q.Int(14), q.Text(15), q.Text(16), q.Int(17)});
    }
    if (!s.ok()) return s;
    return dead;
  }

  StatusOr<InboxDetail> Show(const std::string& endpoint, const std::string& event_id) override {
    std::lock_guard lock(read_mu_);
    Db& db = *reader_;
    // One read transaction: the row, its jobs and their attempts as of one moment.
    Status s = db.Exec("BEGIN");
    if (!s.ok()) return s;
    auto detail = ShowLocked(db, endpoint, event_id);
    (void)db.Exec("COMMIT");
    return detail;
  }

  StatusOr<InboxStats> Stats() override {
    std::lock_guard lock(read_mu_);
    HOOKBOX_PREPARE(q, *reader_,
                    "SELECT endpoint, status, count(*) FROM inbox GROUP BY endpoint, status");
    InboxStats stats;
    Status s;
    while (q.Step(&s)) stats[q.Text(0)][q.Text(1)] = q.Int(2);
    if (!s.ok()) return s;
    return stats;
  }

  StatusOr<QueueStats> Queue(bool count_done) override {
    std::lock_guard lock(read_mu_);
    QueueStats q;
    Status s;
    {
      HOOKBOX_PREPARE(jobs, *reader_, QueueCountSql(count_done));
      while (jobs.Step(&s)) q.jobs_by_status[jobs.Text(0)] = jobs.Int(1);
      if (!s.ok()) return s;
    }
    HOOKBOX_PREPARE(oldest, *reader_,
                    "SELECT min(i.received_at) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                    " WHERE j.status IN ('pending', 'processing')");
    if (oldest.Step(&s)) q.oldest_unfinished_received_at = oldest.Text(0);
    if (!s.ok()) return s;
    return q;
  }

  StatusOr<PurgeCounts> Purge(const PurgeRequest& r) override {
    PurgeCounts counts;
    static const std::string kRows = PurgeRowCondition('?', "");
    static const std::string kCount = "SELECT count(*) FROM inbox WHERE " + kRows;
    static const std::string kDelete =
        "DELETE FROM inbox WHERE id IN (SELECT id FROM inbox WHERE " + kRows + " LIMIT ?3)";
    for (const PurgeTarget& target : PurgeTargets(r, &counts)) {
      auto n =
          PurgeRows(r, kCount.c_str(), kDelete.c_str(), target.status, FormatTime(target.before));
      if (!n.ok()) return n.status();
      *target.count = *n;
    }
    auto n = PurgeRows(r, "SELECT count(*) FROM sequences WHERE ?1 = ?1 AND updated_at < ?2",
                       "DELETE FROM sequences WHERE ?1 = ?1 AND (endpoint, resource_id) IN"
                       " (SELECT endpoint, resource_id FROM sequences WHERE updated_at < ?2"
                       " LIMIT ?3)",
                       "", FormatTime(r.sequences_before));
    if (!n.ok()) return n.status();
    counts.sequences = *n;
    return counts;
  }

  std::optional<int64_t> WalBytes() override {
    struct stat st {};
    if (::stat(wal_path_.c_str(), &st) != 0) return 0;  // no WAL file yet (or any more)
    return static_cast<int64_t>(st.st_size);
  }

  Status Ping() override {
    std::lock_guard lock(read_mu_);
    HOOKBOX_PREPARE(q, *reader_, "SELECT count(*) FROM schema_migrations");
    return q.Run();
  }

 private:
  // A write waiting for its group's commit: on its caller's stack, no heap allocation.
  struct PendingWrite {
    std::function<Status(Db&)>* fn;
    Status result;
  };

  // Runs fn in a group commit (group_commit.h) and returns once the group is durable (or
  // failed). The writer connection is only ever used by the leader, one at a time.
  Status Write(std::function<Status(Db&)> fn) {
    PendingWrite w{&fn, {}};
    // Bounded groups keep one slow fsync from holding thousands of callers.
    writes_.Submit(w, kMaxGroup, [this](const std::vector<PendingWrite*>& group) {
      std::vector<Status> results = RunGroup(group);
      for (size_t i = 0; i < group.size(); ++i) group[i]->result = std::move(results[i]);
    });
    return w.result;
  }

  // One transaction for the whole group, a SAVEPOINT per write.
  std::vector<Status> RunGroup(const std::vector<PendingWrite*>& batch) {
    Db& db = *writer_db_;
    std::vector<Status> results(batch.size());
    sqlite::Transaction tx(db);
    if (Status s = tx.Begin(); !s.ok()) {
      std::fill(results.begin(), results.end(), s);
      return results;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      (void)RunCached(db, kSavepoint);
      results[i] = (*batch[i]->fn)(db);
      if (results[i].ok()) {
        (void)RunCached(db, kRelease);
        continue;
      }
      if (!db.InTransaction()) {
        // SQLite rolled the whole transaction back (disk full, I/O error): the group's
        // earlier writes are gone too, so every caller gets the failure.
        Status lost = results[i].code() == Status::Code::kUnavailable
                          ? results[i]
                          : Status::Unavailable("storage unavailable", results[i].ToString());
        for (size_t j = 0; j < batch.size(); ++j) {
          if (j != i) results[j] = lost;
        }
        return results;
      }
      (void)RunCached(db, kRollbackTo);
      (void)RunCached(db, kRelease);
    }
    if (Status s = tx.Commit(); !s.ok()) {
      Status lost = s.code() == Status::Code::kUnavailable
                        ? s
                        : Status::Unavailable("storage unavailable", s.ToString());
      std::fill(results.begin(), results.end(), lost);
    }
    return results;
  }

  StatusOr<BulkPlan> PlanLocked(Db& db, const BulkRequest& r) {
    BulkPlan plan;
    Status s;
    {
      std::vector<SqlValue> params;
      HOOKBOX_PREPARE(q, db,
                      "SELECT status, count(*)" + BulkRowsTail(r, SqlDialect::kSqlite, &params) +
                          " GROUP BY status");
      BindAll(q, params);
      while (q.Step(&s)) CountMatched(&plan, q.Text(0), q.Int(1));
      if (!s.ok()) return s;
    }
    {
      std::vector<SqlValue> params;
      HOOKBOX_PREPARE(q, db,
                      "SELECT i.endpoint, j.handler, count(*)" +
                          BulkJobsTail(r, SqlDialect::kSqlite, &params) +
                          " GROUP BY i.endpoint, j.handler");
      BindAll(q, params);
      while (q.Step(&s)) {
        plan.jobs_by_handler[q.Text(0) + "/" + q.Text(1)] = q.Int(2);
        plan.jobs += q.Int(2);
      }
      if (!s.ok()) return s;
    }
    {
      std::vector<SqlValue> params;
      HOOKBOX_PREPARE(q, db,
                      "SELECT count(DISTINCT j.inbox_id), coalesce(min(i.received_at), ''),"
                      " coalesce(max(i.received_at), '')" +
                          BulkJobsTail(r, SqlDialect::kSqlite, &params));
      BindAll(q, params);
      if (q.Step(&s)) {
        plan.rows = q.Int(0);
        plan.oldest = q.Text(1);
        plan.newest = q.Text(2);
      }
      if (!s.ok()) return s;
    }
    FinishPlan(&plan);
    return plan;
  }

  static void BindAll(sqlite::Stmt& q, const std::vector<SqlValue>& params) {
    for (size_t i = 0; i < params.size(); ++i) {
      std::visit([&](const auto& v) { q.Bind(static_cast<int>(i + 1), v); }, params[i]);
    }
  }

  // The jobs a bulk verb acts on, as (job id, inbox id), in received order.
  StatusOr<std::vector<std::pair<int64_t, int64_t>>> BulkTargets(const BulkRequest& r) {
    std::vector<std::pair<int64_t, int64_t>> targets;
    std::lock_guard lock(read_mu_);
    std::vector<SqlValue> params;
    HOOKBOX_PREPARE(q, *reader_,
                    "SELECT j.id, j.inbox_id" + BulkJobsTail(r, SqlDialect::kSqlite, &params) +
                        " ORDER BY i.id, j.id");
    BindAll(q, params);
    Status s;
    while (q.Step(&s)) targets.emplace_back(q.Int(0), q.Int(1));
    if (!s.ok()) return s;
    return targets;
  }

  // RetryDead and Replay: the jobs to act on, read at once (their ids, in received order),
  // then changed a chunk (at most kBulkChunk, or r.batch) per statement: one UPDATE over the
  // chunk's (id, due time) pairs, passed as one JSON array, each job by a compare-and-swap
  // on the status it was read in (a job that changed since, or is leased, is left alone),
  // RETURNING the rows whose job changed; then one UPDATE of those rows' status. Run as
  // `hookbox inbox retry` beside the daemon, it shares the write lock with the daemon's
  // accepts: each write transaction takes chunks until it has held the lock for kBulkHold,
  // so an accept waits at most that (and our commit) behind it; between transactions it
  // leaves the lock free for kBulkGap, in which a daemon writer that waited gets it (it
  // polls every millisecond: PollForWriteLock). The time it holds the lock, not a count,
  // bounds the wait, on any disk and any size of row. 8 ms and 3 ms: at 20 ms and 2 ms the
  // accepts' p99 during a 100,000-job retry was 67 ms, at 8 and 3 it was 19-29 ms in eight
  // runs of ten, and the retry took 3.8-4.5 s instead of 3.4 (bench/RESULTS.md).
  static constexpr auto kBulkHold = std::chrono::milliseconds(8);
  static constexpr auto kBulkGap = std::chrono::milliseconds(3);
  static constexpr size_t kBulkChunk = 200;

  // The UPDATE of one chunk of jobs: ?1 is the chunk's [[job id, due time], ...] as JSON.
  // The pairs drive the join, each job found by its rowid. `+status` keeps the status test
  // off the jobs_due index: with it, SQLite's planner (no ANALYZE statistics) preferred
  // walking every dead job in jobs_due for each chunk, which made a bulk retry quadratic
  // (100,000 jobs: 6.2 s of CPU in this statement, 1.3 s without; bench/RESULTS.md).
  static std::string BulkJobSql(bool replay) {
    return std::string(
               "UPDATE jobs SET status = 'pending', attempts = 0, next_attempt_at = p.due,"
               " sync = 0") +
           (replay ? ", generation = generation + 1, last_error = NULL" : "") +
           " FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS due"
           " FROM json_each(?1)) AS p WHERE jobs.id = p.id AND +jobs.status = " +
           (replay ? "'done'" : "'dead'") + " RETURNING inbox_id";
  }

  // The JSON array of (job id, due time) pairs of targets [from, to).
  static std::string BulkPairs(const BulkRequest& r,
                               const std::vector<std::pair<int64_t, int64_t>>& targets, size_t from,
                               size_t to, const std::string& due_now) {
    std::string pairs = "[";
    for (size_t i = from; i < to; ++i) {
      if (i != from) pairs += ',';
      pairs += '[' + std::to_string(targets[i].first) + ",\"" +
               (r.rate > 0 ? FormatTime(BulkDueAt(r, static_cast<int64_t>(i))) : due_now) + "\"]";
    }
    return pairs + ']';
  }

  // One chunk: its jobs' UPDATE, then one UPDATE of the rows whose job changed. Adds the
  // jobs changed to *changed.
  static Status RunBulkChunk(sqlite::Stmt& job, sqlite::Stmt& row, const std::string& pairs,
                             int64_t* changed) {
    job.Bind(1, pairs);
    std::string rows = "[";  // the rows whose job changed, each once
    int64_t last_row = 0;
    Status st;
    while (job.Step(&st)) {
      ++*changed;
      const int64_t id = job.Int(0);
      if (id == last_row) continue;  // a row's jobs come together: fewer repeats
      if (rows.size() > 1) rows += ',';
      rows += std::to_string(id);
      last_row = id;
    }
    if (!st.ok()) return st;
    job.Reset();
    rows += ']';
    if (rows.size() > 2) {
      row.Bind(1, rows);
      if (st = row.Run(); !st.ok()) return st;
      row.Reset();
    }
    return Status::Ok();
  }

  // What ActBulk's write transactions did, for its log line.
  struct BulkWrites {
    int64_t rearmed = 0;
    int64_t transactions = 0;
    std::chrono::steady_clock::duration held{};
    std::chrono::steady_clock::duration longest{};
  };

  static void LogBulkWrites(const BulkRequest& r, size_t jobs, const BulkWrites& w) {
    using Ms = std::chrono::duration<double, std::milli>;
    LogInfo({{"msg", "bulk writes"},
             {"verb", BulkVerbName(r.verb)},
             {"jobs", jobs},
             {"rearmed", w.rearmed},
             {"transactions", w.transactions},
             {"held_ms", Ms(w.held).count()},
             {"longest_hold_ms", Ms(w.longest).count()}});
  }

  StatusOr<int64_t> ActBulk(const BulkRequest& r) {
    if (Status s = CheckBulk(r); !s.ok()) return s;
    auto found = BulkTargets(r);
    if (!found.ok()) return found.status();
    const std::vector<std::pair<int64_t, int64_t>>& targets = *found;
    const std::string job_sql = BulkJobSql(r.verb == BulkVerb::kReplay);
    const size_t chunk = std::min(kBulkChunk, static_cast<size_t>(std::max(1, r.batch)));
    const std::string due_now = r.rate > 0 ? "" : FormatTime(r.now);
    BulkWrites w;
    size_t next = 0;
    while (next < targets.size()) {
      size_t done_to = next;
      int64_t changed = 0;
      std::chrono::steady_clock::duration took{};
      Status s = Write([&](Db& db) -> Status {
        // Timed from here: the write lock is ours from BEGIN IMMEDIATE on.
        const auto started = std::chrono::steady_clock::now();
        done_to = next;
        changed = 0;
        HOOKBOX_PREPARE(job, db, job_sql);
        // Pending again, unless another job of the row stays dead (a retry of one handler).
        HOOKBOX_PREPARE(row, db,
                        "UPDATE inbox SET status = CASE WHEN EXISTS (SELECT 1 FROM jobs"
                        " WHERE jobs.inbox_id = inbox.id AND jobs.status = 'dead')"
                        " THEN 'dead' ELSE 'pending' END, processed_at = NULL"
                        " WHERE id IN (SELECT value FROM json_each(?1))");
        std::chrono::steady_clock::duration last{};
        while (done_to < targets.size()) {
          const auto chunk_started = std::chrono::steady_clock::now();
          if (chunk_started - started + last > kBulkHold) break;
          const size_t to = std::min(targets.size(), done_to + chunk);
          const std::string pairs = BulkPairs(r, targets, done_to, to, due_now);
          if (Status st = RunBulkChunk(job, row, pairs, &changed); !st.ok()) return st;
          done_to = to;
          last = std::chrono::steady_clock::now() - chunk_started;
        }
        took = std::chrono::steady_clock::now() - started;
        return Status::Ok();
      });
      if (!s.ok()) return s;
      next = done_to;
      w.rearmed += changed;
      ++w.transactions;
      w.held += took;
      w.longest = std::max(w.longest, took);
      if (next < targets.size()) std::this_thread::sleep_for(kBulkGap);
    }
    if (!targets.empty()) LogBulkWrites(r, targets.size(), w);
    return w.rearmed;
  }

  StatusOr<InboxDetail> ShowLocked(Db& db, const std::string& endpoint,
                                   const std::string& event_id) {
    InboxDetail d;
    Status s;
    {
      HOOKBOX_PREPARE(q, db,
                      std::string("SELECT ") + kRowColumns +
                          ", body FROM inbox WHERE endpoint = ? AND event_id = ?");
      q.Bind(1, endpoint).Bind(2, event_id);
      if (!q.Step(&s)) {
        if (!s.ok()) return s;
        return Status::NotFound("no such event", endpoint + " " + event_id);
      }
      d.row = ReadRow(q);
      d.row.body = q.Text(14);
    }
    HOOKBOX_PREPARE(jq, db,
                    "SELECT id, handler, status, attempts, next_attempt_at, lease_owner,"
                    " lease_until, last_error, generation FROM jobs WHERE inbox_id = ?"
                    " ORDER BY id");
    jq.Bind(1, d.row.id);
    while (jq.Step(&s)) {
      JobRow j;
      j.id = jq.Int(0);
      j.handler = jq.Text(1);
      j.status = jq.Text(2);
      j.attempts = jq.Int(3);
      j.next_attempt_at = jq.Text(4);
      j.lease_owner = jq.Text(5);
      j.lease_until = jq.Text(6);
      j.last_error = jq.Text(7);
      j.generation = jq.Int(8);
      d.jobs.push_back(std::move(j));
    }
    if (!s.ok()) return s;
    HOOKBOX_PREPARE(aq, db,
                    "SELECT number, started_at, finished_at, outcome, detail, generation"
                    " FROM attempts WHERE job = ? ORDER BY number");
    for (JobRow& j : d.jobs) {
      aq.Bind(1, j.id);
      while (aq.Step(&s)) {
        j.attempt_rows.push_back(
            {aq.Int(0), aq.Int(5), aq.Text(1), aq.Text(2), aq.Text(3), aq.Text(4)});
      }
      if (!s.ok()) return s;
      aq.Reset();
    }
    return d;
  }

  // WAL checkpoints, never on the accept path. SQLite's own would run inside the COMMIT that
  // finds 1000 pages in the WAL, copying them into the database file and fsyncing it while
  // every delivery of that group waits. Here the writer only counts: after each commit
  // (OnWalCommit, on the leading write's thread) it notes the WAL's length and, every
  // kCheckpointPages new pages, wakes the checkpointer thread, which copies the WAL into the
  // database on its own connection (PASSIVE: it never waits for, or blocks, writers or
  // readers).
  //
  // SQLite starts the WAL file over only when a write begins with all of it copied, which
  // under steady load never happens by itself: each copy ends a little behind the writer.
  // So once the WAL has passed kWalRestartPages, the checkpointer copies again until what is
  // left is short (each pass copies only what came in during the one before), then copies
  // that rest in an Exclusive turn of the group commit: writes queue meanwhile, for the copy
  // of at most kRestartTail pages and one fsync of the database, never for the bulk; the
  // next write starts the WAL over, and journal_size_limit cuts the file back after a burst.
  // If the disk cannot keep up and the WAL reaches kWalForcePages, the rest is copied in the
  // turn whatever its length, so that the WAL stays bounded.
  static int OnWalCommit(void* self, sqlite3*, const char*, int pages) {
    auto* inbox = static_cast<SqliteInbox*>(self);
    if (pages < inbox->next_checkpoint_ - kCheckpointPages) {
      inbox->next_checkpoint_ = kCheckpointPages;  // the WAL started over
    }
    if (pages >= inbox->next_checkpoint_) {
      inbox->next_checkpoint_ = pages + kCheckpointPages;
      {
        std::lock_guard lock(inbox->checkpoint_mu_);
        inbox->checkpoint_due_ = true;
      }
      inbox->checkpoint_cv_.notify_one();
    }
    return SQLITE_OK;
  }

  // A checkpoint that fails for a reason other than contention (an I/O error on the WAL's or
  // the database file's fsync, a full disk) is an error line and a count (CopyWal, through
  // ops/storage_health.h), and is tried again every kCheckpointRetry until one succeeds, not
  // only at the next kCheckpointPages: a WAL that cannot be copied grows, and the daemon
  // says so (/readyz, hookbox_wal_bytes) until it can again.
  void CheckpointLoop() {
    bool failing = false;  // the last copy that was not contended met a fault
    for (;;) {
      {
        std::unique_lock lock(checkpoint_mu_);
        auto woken = [this] { return checkpoint_stopping_ || checkpoint_due_; };
        if (failing) {
          checkpoint_cv_.wait_for(lock, kCheckpointRetry, woken);
        } else {
          checkpoint_cv_.wait(lock, woken);
        }
        if (checkpoint_stopping_) return;
        checkpoint_due_ = false;
      }
      WalState wal;
      // BUSY (another checkpoint runs, say in a CLI process) is fine: the next wake retries.
      if (!CopyWal(&wal, &failing)) continue;
      for (int pass = 0; pass < kCatchUpPasses && wal.pages >= kWalRestartPages &&
                         wal.pages < kWalForcePages && wal.left() > kRestartTail;
           ++pass) {
        if (!CopyWal(&wal, &failing)) break;
      }
      if (!failing && wal.pages >= kWalRestartPages &&
          (wal.left() <= kRestartTail || wal.pages >= kWalForcePages)) {
        writes_.Exclusive([&] { CopyWal(&wal, &failing); });
      }
    }
  }

  struct WalState {
    int pages = 0;   // frames in the WAL
    int copied = 0;  // of which already in the database file
    int left() const { return pages - copied; }
  };

  // One PASSIVE copy (which may copy less than all, or nothing, beside readers: that is no
  // failure). False when it did not complete: contention (quiet, *failing as it was) or a
  // fault (logged, counted, *failing set); a completed copy clears *failing.
  bool CopyWal(WalState* wal, bool* failing) {
    const int rc = sqlite3_wal_checkpoint_v2(checkpoint_db_->raw(), nullptr,
                                             SQLITE_CHECKPOINT_PASSIVE, &wal->pages, &wal->copied);
    if (rc == SQLITE_OK) {
      *failing = false;
      Storage().Record(kStorageCheckpoint, Status::Ok());
      return true;
    }
    const Status s = checkpoint_db_->Error(rc, "checkpoint");
    if (!IsStorageBusy(s)) *failing = true;
    Storage().Record(kStorageCheckpoint, s);
    return false;
  }

  // Counts (dry run) or deletes, one batch per write transaction, the rows a purge query
  // selects with ?1 = status, ?2 = cutoff, ?3 = batch size.
  StatusOr<int64_t> PurgeRows(const PurgeRequest& r, const char* count_sql, const char* delete_sql,
                              const std::string& status, const std::string& cutoff) {
    if (r.dry_run) {
      std::lock_guard lock(read_mu_);
      HOOKBOX_PREPARE(q, *reader_, count_sql);
      q.Bind(1, status).Bind(2, cutoff);
      Status s;
      int64_t n = q.Step(&s) ? q.Int(0) : 0;
      if (!s.ok()) return s;
      return n;
    }
    // Accepts wait behind each purge transaction: in this process's writer queue, or for
    // the write lock when the purge runs as `hookbox purge` beside the daemon. So a
    // transaction deletes at most r.batch rows, and fewer while that takes longer than
    // kPurgeTransaction (deleting a row rewrites its pages, five index entries, its job and
    // attempts: on a large database, pages all over the file); and after each one the purge
    // pauses as long as it took (at least kPurgePause): a writer polling for the lock
    // (PollForWriteLock) gets it, and the purge's page writes take at most about half of
    // the disk's time, so accepts' fsyncs do not queue behind them.
    int64_t total = 0;
    int64_t batch = std::max(1, r.batch);
    for (;;) {
      int64_t deleted = 0;
      const auto started = std::chrono::steady_clock::now();
      Status s = Write([&](Db& db) -> Status {
        HOOKBOX_PREPARE(del, db, delete_sql);
        del.Bind(1, status).Bind(2, cutoff).Bind(3, batch);
        Status st = del.Run();
        deleted = db.Changes();
        return st;
      });
      if (!s.ok()) return s;
      total += deleted;
      if (deleted < batch) return total;
      const auto took = std::chrono::steady_clock::now() - started;
      if (took > kPurgeTransaction) {
        batch = std::max<int64_t>(kMinPurgeBatch, batch / 2);
      } else if (took < kPurgeTransaction / 4) {
        batch = std::min<int64_t>(r.batch, batch * 2);
      }
      std::this_thread::sleep_for(std::max<std::chrono::steady_clock::duration>(took, kPurgePause));
    }
  }

  static constexpr size_t kMaxGroup = 256;
  static constexpr auto kPurgeTransaction = std::chrono::milliseconds(20);
  static constexpr auto kPurgePause = std::chrono::milliseconds(3);
  static constexpr int64_t kMinPurgeBatch = 10;
  inline static const std::string kSavepoint = "SAVEPOINT w";
  inline static const std::string kRelease = "RELEASE w";
  inline static const std::string kRollbackTo = "ROLLBACK TO w";
  inline static const std::string kFinishSavepoint = "SAVEPOINT f";
  inline static const std::string kFinishRelease = "RELEASE f";
  inline static const std::string kFinishRollbackTo = "ROLLBACK TO f";

  std::unique_ptr<Db> writer_db_;  // used by the leading write only (see Write)
  GroupCommit<PendingWrite> writes_;

  std::mutex read_mu_;  // guards reader_
  std::unique_ptr<Db> reader_;
  const std::string wal_path_;  // `<database>-wal` (WalBytes)

  // About 4 MiB of WAL per background checkpoint (SQLite's own default interval); the WAL
  // file started over at about 32 MiB, after at most kCatchUpPasses extra copies, with at
  // most kRestartTail pages (1 MiB) copied while writes wait, or whatever is left at 128 MiB.
  static constexpr int kCheckpointPages = 1000;
  static constexpr int kWalRestartPages = 8000;
  static constexpr int kWalForcePages = 4 * kWalRestartPages;
  static constexpr int kRestartTail = 256;
  static constexpr int kCatchUpPasses = 8;
  static constexpr auto kCheckpointRetry = std::chrono::seconds(1);
  std::unique_ptr<Db> checkpoint_db_;  // owned by checkpointer_ after construction
  std::thread checkpointer_;
  std::mutex checkpoint_mu_;  // guards checkpoint_due_, checkpoint_stopping_
  std::condition_variable checkpoint_cv_;
  bool checkpoint_due_ = false;
  bool checkpoint_stopping_ = false;
  int next_checkpoint_ = kCheckpointPages;  // the leading write only
};

}  // namespace

StatusOr<std::unique_ptr<Inbox>> OpenSqliteInbox(const InboxOptions& options,
                                                 std::vector<std::string>* applied) {
  auto writer = Db::Open(options.database, options.create, options.durable);
  if (!writer.ok()) return writer.status();
  sqlite3_busy_handler((*writer)->raw(), &PollForWriteLock, nullptr);  // replaces busy_timeout
  if (!options.create) {
    if (Status s = CheckSchema(**writer, options.database); !s.ok()) return s;
  } else if (Status s = Migrate(**writer, applied); !s.ok()) {
    return Status::Unavailable("cannot migrate database", s.ToString());
  }
  // The SAVEPOINT of each write keeps the original of every page the write changes in a
  // statement journal: in memory, not in a temporary file written page by page.
  if (Status s = (*writer)->Exec("PRAGMA temp_store=MEMORY"); !s.ok()) return s;
  // After a burst, the WAL file's first write past its start cuts it back to 64 MiB (see
  // CheckpointLoop for when it starts over).
  if (Status s = (*writer)->Exec("PRAGMA journal_size_limit=67108864"); !s.ok()) return s;
  auto reader = Db::Open(options.database, false, options.durable);
  if (!reader.ok()) return reader.status();
  auto checkpointer = Db::Open(options.database, false, options.durable);
  if (!checkpointer.ok()) return checkpointer.status();
  return std::unique_ptr<Inbox>(std::make_unique<SqliteInbox>(
      std::move(*writer), std::move(*reader), std::move(*checkpointer)));
}

}  // namespace hookbox
