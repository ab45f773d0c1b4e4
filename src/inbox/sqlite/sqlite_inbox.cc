// The SQLite inbox (see sqlite_inbox.h): the inbox's algorithm (sql_inbox.h) over one
// writer connection with leader-led group commit and one reader, background WAL
// checkpoints, migrations, and the bulk verbs' time-bounded write transactions.
#include "inbox/sqlite/sqlite_inbox.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <variant>

#include "inbox/group_commit.h"
#include "inbox/migration.h"
#include "inbox/sql_inbox.h"
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

// `serve` and `migrate`: applies what is missing in one BEGIN IMMEDIATE transaction. A file
// already up to date is only read, so a daemon starting while a shell's `purge` holds the
// write lock does not wait for it.
Status Migrate(Db& db, std::vector<std::string>* applied) {
  auto before = SchemaVersion(db);
  if (!before.ok()) return before.status();
  if (*before >= LatestMigration(kSqliteMigrations)) return Status::Ok();
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

// The operator's verbs: a read of the schema's version, never BEGIN IMMEDIATE, so they work
// while another process holds the write lock (docs/SECURITY.md row 83). A file without
// hookbox's tables, or whose migrations are behind this binary (its statements may use what
// they add), is refused and left as it is.
Status CheckSchema(Db& db, const std::string& path) {
  auto version = SchemaVersion(db);
  if (!version.ok()) return version.status();
  if (*version == 0) {
    return Status::Unavailable("no hookbox tables in the database",
                               path + ": run `hookbox migrate` first (or `serve`)");
  }
  return CheckVersion(path, *version, kSqliteMigrations);
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

// One transaction of the algorithm (sql_inbox.h) on a SQLite connection: `$N` read as `?N`,
// `::type` casts dropped, each statement prepared once (Db's cache).
class SqliteTx final : public SqlTx {
 public:
  explicit SqliteTx(Db& db) : db_(db) {}

  StatusOr<SqlRows> Query(const std::string& sql, const SqlArgs& args) override {
    HOOKBOX_PREPARE(q, db_, Translate(sql));
    for (size_t i = 0; i < args.size(); ++i) {
      const int at = static_cast<int>(i + 1);
      const SqlArg& a = args[i];
      if (a.kind() == SqlArg::Kind::kText) q.Bind(at, a.text());
      if (a.kind() == SqlArg::Kind::kBytes) q.BindBlob(at, a.text());
      if (a.kind() == SqlArg::Kind::kInt || a.kind() == SqlArg::Kind::kBool) q.Bind(at, a.number());
    }
    SqlRows out;
    Status s;
    while (q.Step(&s)) {
      std::vector<std::string>& row = out.rows.emplace_back(q.Columns());
      for (int c = 0; c < q.Columns(); ++c) row[c] = q.Text(c);
    }
    if (!s.ok()) return s;
    out.changed = db_.Changes();
    return out;
  }

  bool Lost() override { return !db_.InTransaction(); }

  Status RunUserSql(const std::string& statement, const HandlerEvent& e) override {
    auto q = db_.Prepare(statement);
    if (!q.ok()) return q.status();
    BindEventParams(**q, e);
    return (*q)->Run();
  }

 private:
  // PostgreSQL's spelling as SQLite's, outside quoted text.
  static std::string Translate(const std::string& sql) {
    std::string out;
    out.reserve(sql.size());
    bool quoted = false;
    for (size_t i = 0; i < sql.size(); ++i) {
      const char c = sql[i];
      if (c == '\'') quoted = !quoted;
      if (!quoted && c == '$' && i + 1 < sql.size() && std::isdigit(sql[i + 1])) {
        out += '?';
      } else if (!quoted && c == ':' && i + 1 < sql.size() && sql[i + 1] == ':') {
        i += 2;
        while (i < sql.size() && (std::isalpha(sql[i]) || sql[i] == '_')) ++i;
        --i;
      } else {
        out += c;
      }
    }
    return out;
  }

  Db& db_;
};

class SqliteInbox final : public SqlInbox {
 public:
  SqliteInbox(std::unique_ptr<Db> writer, std::unique_ptr<Db> reader,
              std::unique_ptr<Db> checkpointer)
      : SqlInbox(kSqliteSpelling),
        writer_db_(std::move(writer)),
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

  // Writes (a claim too) go through the group commit, in the writer's transaction; reads on
  // the reader connection, a snapshot in a read transaction of its own.
  Status Transact(TxKind kind, const TxFn& fn) override {
    if (kind == TxKind::kWrite || kind == TxKind::kClaim) {
      return Write([&](Db& db) {
        SqliteTx tx(db);
        return fn(tx);
      });
    }
    std::lock_guard lock(read_mu_);
    SqliteTx tx(*reader_);
    if (kind == TxKind::kRead) return fn(tx);
    if (Status s = reader_->Exec("BEGIN"); !s.ok()) return s;
    Status s = fn(tx);
    (void)reader_->Exec("COMMIT");
    return s;
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
  // off the jobs_due index: with it, SQLite's planner (no ANALYZE statistics) prefers
  // walking every dead job in jobs_due for each chunk, which makes a bulk retry quadratic in
  // the number of dead jobs.
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
  static constexpr size_t kMaxGroup = 256;
  inline static const std::string kSavepoint = "SAVEPOINT w";
  inline static const std::string kRelease = "RELEASE w";
  inline static const std::string kRollbackTo = "ROLLBACK TO w";

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
