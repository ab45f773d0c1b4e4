// The SQLite inbox (see sqlite_inbox.h): the inbox's algorithm (sql_inbox.h) over one
// writer connection with leader-led group commit and one reader, background WAL
// checkpoints, and migrations.
#include "inbox/sqlite/sqlite_inbox.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "base/status_macros.h"
#include "inbox/group_commit.h"
#include "inbox/migration.h"
#include "inbox/sql_inbox.h"
#include "inbox/sqlite/db.h"
#include "ops/log.h"
#include "ops/storage_health.h"

namespace hookbox {
namespace {

using sqlite::Db;

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

  StatusOr<SqlRows> Query(const std::string& sql, const SqlArgs& args = {}) override {
    ASSIGN_OR_RETURN(const std::unique_ptr<sqlite::Stmt> stmt, db_.Prepare(sql, &Translate));
    sqlite::Stmt& q = *stmt;
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
    RETURN_IF_ERROR(s);
    out.changed = db_.Changes();
    return out;
  }

  StatusOr<std::optional<int64_t>> InsertRow(const std::string& sql, const SqlArgs& args) override {
    ASSIGN_OR_RETURN(const SqlRows& r, Query(sql, args));
    if (r.changed == 0) return std::optional<int64_t>();
    return std::optional<int64_t>(db_.LastInsertId());
  }

  bool Lost() override { return !db_.InTransaction(); }

  Status RunUserSql(const std::string& statement, const HandlerEvent& e) override {
    ASSIGN_OR_RETURN(const std::unique_ptr<sqlite::Stmt> q, db_.Prepare(statement));
    BindEventParams(*q, e);
    return q->Run();
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

// The highest migration recorded in the file, read without a write lock; 0 when the file has
// no hookbox tables (a new file, or another program's).
StatusOr<int64_t> SchemaVersion(SqlTx& tx) {
  ASSIGN_OR_RETURN(const SqlRows& tables,
                   tx.Query("SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                            " AND name IN ('schema_migrations', 'inbox')"));
  if (tables.Int(0, 0) != 2) return int64_t{0};
  ASSIGN_OR_RETURN(const SqlRows& v,
                   tx.Query("SELECT coalesce(max(version), 0) FROM schema_migrations"));
  return v.Int(0, 0);
}

// `serve` and `migrate`: applies what is missing in one BEGIN IMMEDIATE transaction. A file
// already up to date is only read, so a daemon starting while a shell's `purge` holds the
// write lock does not wait for it.
Status Migrate(Db& db, std::vector<std::string>* applied) {
  SqliteTx tx(db);
  ASSIGN_OR_RETURN(const int64_t before, SchemaVersion(tx));
  if (before >= LatestMigration(kSqliteMigrations)) return Status::Ok();
  RETURN_IF_ERROR(
      db.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
              "name TEXT NOT NULL, applied_at TEXT NOT NULL)"));
  sqlite::Transaction write(db);
  RETURN_IF_ERROR(write.Begin());
  // Again under the lock: another process may have migrated since the read above.
  ASSIGN_OR_RETURN(const SqlRows& current,
                   tx.Query("SELECT coalesce(max(version), 0) FROM schema_migrations"));
  for (const Migration& m : kSqliteMigrations) {
    if (m.version <= current.Int(0, 0)) continue;
    RETURN_IF_ERROR(db.Exec(m.sql));
    RETURN_IF_ERROR(
        tx.Run("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
               {int64_t{m.version}, m.name, FormatTime(std::chrono::system_clock::now())}));
    if (applied) applied->push_back(m.name);
  }
  return write.Commit();
}

// The operator's verbs: a read of the schema's version, never BEGIN IMMEDIATE, so they work
// while another process holds the write lock (docs/SECURITY.md row 83). A file without
// hookbox's tables, or whose migrations are behind this binary (its statements may use what
// they add), is refused and left as it is.
Status CheckSchema(Db& db, const std::string& path) {
  SqliteTx tx(db);
  ASSIGN_OR_RETURN(const int64_t version, SchemaVersion(tx));
  if (version == 0) {
    return Status::Unavailable("no hookbox tables in the database",
                               path + ": run `hookbox migrate` first (or `serve`)");
  }
  return CheckVersion(path, version, kSqliteMigrations);
}

// Runs a statement that returns no rows (SAVEPOINT, RELEASE) as a cached prepared statement:
// Db::Exec (sqlite3_exec) would parse it again each time, and the writer runs these for
// every delivery.
Status RunCached(Db& db, const std::string& sql) {
  ASSIGN_OR_RETURN(const std::unique_ptr<sqlite::Stmt> q, db.Prepare(sql));
  return q->Run();
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
    RETURN_IF_ERROR(reader_->Exec("BEGIN"));
    Status s = fn(tx);
    (void)reader_->Exec("COMMIT");
    return s;
  }
  Status PrepareSql(const SqlWork& sql) override {
    return Write([&](Db& db) -> Status {
      for (const std::string& statement : sql.setup) {
        RETURN_IF_ERROR(db.Exec(statement.c_str()));
      }
      for (const std::string& statement : sql.statements) RETURN_IF_ERROR(db.Prepare(statement));
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
    ASSIGN_OR_RETURN(const std::unique_ptr<sqlite::Stmt> q,
                     reader_->Prepare("SELECT count(*) FROM schema_migrations"));
    return q->Run();
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

  // One transaction for the whole group, a SAVEPOINT per write: a write that fails is rolled
  // back to its savepoint, alone. When the group's transaction itself fails (SQLite rolled it
  // back on a full disk or an I/O error, its COMMIT failed, or a savepoint could not be set,
  // released or rolled back to, so that what it holds is unknown), nothing of the group is
  // committed: every write that had not failed on its own gets the failure.
  std::vector<Status> RunGroup(const std::vector<PendingWrite*>& batch) {
    Db& db = *writer_db_;
    std::vector<Status> results(batch.size());
    sqlite::Transaction tx(db);
    Status s = tx.Begin();
    for (size_t i = 0; s.ok() && i < batch.size(); ++i) {
      if (s = RunCached(db, kSavepoint); !s.ok()) break;
      results[i] = (*batch[i]->fn)(db);
      if (!results[i].ok() && !db.InTransaction()) {
        s = results[i];  // SQLite rolled the whole transaction back
        break;
      }
      if (!results[i].ok()) s = RunCached(db, kRollbackTo);
      if (s.ok()) s = RunCached(db, kRelease);
    }
    if (s.ok()) s = tx.Commit();
    if (s.ok()) return results;
    const Status lost = s.code() == Status::Code::kUnavailable
                            ? s
                            : Status::Unavailable("storage unavailable", s.ToString());
    for (Status& r : results) {
      if (r.ok()) r = lost;
    }
    return results;  // tx rolls back what is left of the transaction
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
  ASSIGN_OR_RETURN(std::unique_ptr<Db> writer,
                   Db::Open(options.database, options.create, options.durable));
  sqlite3_busy_handler(writer->raw(), &PollForWriteLock, nullptr);  // replaces busy_timeout
  if (!options.create) {
    RETURN_IF_ERROR(CheckSchema(*writer, options.database));
  } else if (Status s = Migrate(*writer, applied); !s.ok()) {
    return Status::Unavailable("cannot migrate database", s.ToString());
  }
  // The SAVEPOINT of each write keeps the original of every page the write changes in a
  // statement journal: in memory, not in a temporary file written page by page.
  RETURN_IF_ERROR(writer->Exec("PRAGMA temp_store=MEMORY"));
  // After a burst, the WAL file's first write past its start cuts it back to 64 MiB (see
  // CheckpointLoop for when it starts over).
  RETURN_IF_ERROR(writer->Exec("PRAGMA journal_size_limit=67108864"));
  ASSIGN_OR_RETURN(std::unique_ptr<Db> reader, Db::Open(options.database, false, options.durable));
  ASSIGN_OR_RETURN(std::unique_ptr<Db> checkpointer,
                   Db::Open(options.database, false, options.durable));
  return std::unique_ptr<Inbox>(
      std::make_unique<SqliteInbox>(std::move(writer), std::move(reader), std::move(checkpointer)));
}

}  // namespace hookbox
