// The SQLite inbox (see sqlite_inbox.h): the inbox's algorithm (sql_inbox.h) over one
// writer connection with leader-led group commit and one reader, background WAL
// checkpoints (sqlite/checkpoints.cc), and migrations.
#include "inbox/sqlite/sqlite_inbox.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <mutex>
#include <thread>

#include "base/status_macros.h"
#include "inbox/group_commit.h"
#include "inbox/migration.h"
#include "inbox/sql_inbox.h"
#include "inbox/sqlite/checkpoints.h"
#include "inbox/sqlite/db.h"

namespace hookbox {
namespace {

using sqlite::Db;
using sqlite::WalCheckpointer;

// Binds each named parameter of a handler's statement to the value its work gives; a name
// it does not know, and a nameless `?`, stay NULL.
void BindNamedParams(sqlite::Stmt& q, const StatementParams& params) {
  for (int i = 1; i <= q.ParamCount(); ++i) {
    const char* name = q.ParamName(i);
    if (name == nullptr) continue;
    const std::optional<StatementValue> v = params(name);
    if (!v) continue;
    if (v->text) {
      q.Bind(i, *v->text);
    } else {
      q.Bind(i, v->number);
    }
  }
}

// What PrepareWork lends a handler's work: its setup statements run on the writer, in the
// setup's transaction; the others prepared there (and kept in the statement cache).
class SqliteSetup final : public WorkSetup {
 public:
  explicit SqliteSetup(Db& db) : db_(db) {}
  Status Execute(const std::string& statement) override { return db_.Exec(statement.c_str()); }
  Status Check(const std::string& statement) override {
    auto prepared = db_.Prepare(statement);
    return prepared.ok() ? Status::Ok() : prepared.status();
  }

 private:
  Db& db_;
};

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
      // Not copied: `args` outlives the statement's use, which ends with this call.
      if (a.kind() == SqlArg::Kind::kText) q.BindView(at, a.text());
      if (a.kind() == SqlArg::Kind::kBytes) q.BindBlobView(at, a.text());
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
    return r.changed == 0 ? std::nullopt : std::optional<int64_t>(db_.LastInsertId());
  }

  bool Lost() override { return !db_.InTransaction(); }

  Status Execute(const std::string& statement, const StatementParams& params) override {
    ASSIGN_OR_RETURN(const std::unique_ptr<sqlite::Stmt> q, db_.Prepare(statement));
    BindNamedParams(*q, params);
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

// The migrations the file records (none when it has no hookbox tables: a new file, or
// another program's), read without a write lock.
StatusOr<std::vector<RecordedMigration>> RecordedMigrations(SqlTx& tx) {
  ASSIGN_OR_RETURN(const SqlRows& tables,
                   tx.Query("SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                            " AND name IN ('schema_migrations', 'inbox')"));
  std::vector<RecordedMigration> out;
  if (tables.Int(0, 0) != 2) return out;
  ASSIGN_OR_RETURN(const SqlRows& rows, tx.Query("SELECT version, name FROM schema_migrations"));
  for (size_t i = 0; i < rows.size(); ++i) out.push_back({rows.Int(i, 0), rows.Text(i, 1)});
  return out;
}

// The file's schema version in this binary's numbers (backend.h, Renumbered).
StatusOr<int64_t> SchemaVersion(SqlTx& tx) {
  ASSIGN_OR_RETURN(const std::vector<RecordedMigration>& recorded, RecordedMigrations(tx));
  return SchemaVersionOf(recorded, kSqliteMigrations);
}

// `serve` and `migrate`: applies what is missing in one BEGIN IMMEDIATE transaction. A file
// already up to date is only read, so a daemon starting while a shell's `purge` holds the
// write lock does not wait for it.
Status Migrate(Db& db, std::vector<std::string>* applied) {
  SqliteTx tx(db);
  ASSIGN_OR_RETURN(const std::vector<RecordedMigration>& seen, RecordedMigrations(tx));
  if (!MigrationDue(seen, kSqliteMigrations)) return Status::Ok();
  RETURN_IF_ERROR(
      db.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
              "name TEXT NOT NULL, applied_at TEXT NOT NULL)"));
  sqlite::Transaction write(db);
  RETURN_IF_ERROR(write.Begin());
  // Again under the lock: another process may have migrated since the read above. Rows
  // under the old numbers get this binary's (backend.h, Renumbered).
  ASSIGN_OR_RETURN(const std::vector<RecordedMigration>& recorded, RecordedMigrations(tx));
  for (const auto& [row, m] : Renumbered(recorded, kSqliteMigrations)) {
    RETURN_IF_ERROR(
        tx.Run("UPDATE schema_migrations SET version = $1, name = $2 WHERE version = $3",
               {int64_t{m->version}, m->name, row.version}));
  }
  const int64_t current = SchemaVersionOf(recorded, kSqliteMigrations);
  for (const Migration& m : kSqliteMigrations) {
    if (m.version <= current) continue;
    RETURN_IF_ERROR(db.Exec(m.sql));
    RETURN_IF_ERROR(
        tx.Run("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
               {int64_t{m.version}, m.name, FormatTime(std::chrono::system_clock::now())}));
    if (applied) applied->push_back(m.name);
  }
  // A migration that rewrites a table's definition in sqlite_schema (0011) leaves the schema
  // version where it was, and connections would keep the old definitions: moved on here, as
  // SQLite's procedure for such a change asks (one more than before), for every migration.
  ASSIGN_OR_RETURN(const SqlRows& version, tx.Query("PRAGMA schema_version"));
  RETURN_IF_ERROR(
      db.Exec(("PRAGMA schema_version = " + std::to_string(version.Int(0, 0) + 1)).c_str()));
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
        checkpoints_(writer_db_->raw(), std::move(checkpointer),
                     [this](const std::function<void()>& copy) { writes_.Exclusive(copy); }) {}

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
    RETURN_IF_ERROR(reader_->Run("BEGIN"));
    Status s = fn(tx);
    (void)reader_->Run("COMMIT");
    return s;
  }
  Status PrepareWork(const TransactionalWork& work) override {
    return Write([&](Db& db) -> Status {
      SqliteSetup setup(db);
      return work.Setup(setup);
    });
  }

  std::optional<int64_t> WalBytes() override {
    struct stat st {};
    if (::stat(wal_path_.c_str(), &st) != 0) return 0;  // no WAL file yet (or any more)
    return static_cast<int64_t>(st.st_size);
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
  //
  // A group of one needs no savepoint: its transaction is the write's, rolled back whole when
  // the write fails. That is every write when deliveries arrive one at a time, and the
  // savepoint (its statements, and the statement journal's copy of every page the write
  // changes) was about a tenth of an accept's instructions (bench/RESULTS.md).
  std::vector<Status> RunGroup(const std::vector<PendingWrite*>& batch) {
    Db& db = *writer_db_;
    std::vector<Status> results(batch.size());
    sqlite::Transaction tx(db);
    Status s = tx.Begin();
    if (s.ok() && batch.size() == 1) {
      results[0] = (*batch[0]->fn)(db);
      if (!results[0].ok()) return results;  // tx rolls the write back
    } else if (s.ok()) {
      s = RunEachInSavepoint(db, batch, results);
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

  // The writes of a group of more than one, each in a savepoint of the open transaction;
  // each write's own result in `results`. Not Ok: the transaction itself failed.
  static Status RunEachInSavepoint(Db& db, const std::vector<PendingWrite*>& batch,
                                   std::vector<Status>& results) {
    for (size_t i = 0; i < batch.size(); ++i) {
      RETURN_IF_ERROR(db.Run(kSavepoint));
      results[i] = (*batch[i]->fn)(db);
      if (!results[i].ok() && !db.InTransaction()) return results[i];  // SQLite rolled it all back
      if (!results[i].ok()) RETURN_IF_ERROR(db.Run(kRollbackTo));
      RETURN_IF_ERROR(db.Run(kRelease));
    }
    return Status::Ok();
  }

  static constexpr size_t kMaxGroup = 256;
  inline static const std::string kSavepoint = "SAVEPOINT w";
  inline static const std::string kRelease = "RELEASE w";
  inline static const std::string kRollbackTo = "ROLLBACK TO w";

  std::unique_ptr<Db> writer_db_;  // used by the leading write only (see Write)
  GroupCommit<PendingWrite> writes_;

  std::mutex read_mu_;  // guards reader_
  std::unique_ptr<Db> reader_;
  const std::string wal_path_;  // `<database>-wal` (WalBytes)

  // Declared after writes_ and writer_db_: destroyed first, its thread joined before they go.
  WalCheckpointer checkpoints_;
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
