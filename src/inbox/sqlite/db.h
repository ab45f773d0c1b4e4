// RAII around SQLite: a Db owns a connection and a cache of prepared statements (prepared
// once, reused for every event), a Stmt resets itself when a use ends, and a Transaction
// rolls back unless Commit() succeeded. Errors become Status: SQLITE_BUSY and SQLITE_LOCKED
// are Unavailable "storage busy" of kind kBusy (contention: quiet), SQLITE_FULL and I/O errors
// Unavailable "storage unavailable" (the caller answers 503 either way), everything else
// Internal.
//
// Not thread-safe: one Db belongs to one thread at a time (the inbox's leading write, or a
// reader under the inbox's read mutex).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"

namespace hookbox::sqlite {

class Db;

// A prepared statement in use. Binds are 1-based, like SQLite's. Destruction resets and
// clears bindings so the cached statement is ready for its next use.
class Stmt final {
 public:
  Stmt(Db& db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Stmt() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Bind(int i, std::string_view text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& BindBlob(int i, std::string_view bytes) {
    sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // The same without SQLite's copy: `text` must stay as it is until this Stmt is destroyed
  // (it clears its bindings then), as a query's arguments do for the query's whole run.
  Stmt& BindView(int i, std::string_view text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
    return *this;
  }
  Stmt& BindBlobView(int i, std::string_view bytes) {
    sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, std::optional<int64_t> v) {
    if (v)
      sqlite3_bind_int64(stmt_, i, *v);
    else
      sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // Ready for the next use of the same statement within one scope (a loop of inserts).
  void Reset() { sqlite3_reset(stmt_); }
  // Named parameters (":event_id").
  int ParamIndex(const char* name) const { return sqlite3_bind_parameter_index(stmt_, name); }
  // The statement's parameters: how many (the largest index), and the name of the one at
  // `i` (1-based) as written, with its prefix (":name"); nullptr for a nameless `?`.
  int ParamCount() const { return sqlite3_bind_parameter_count(stmt_); }
  const char* ParamName(int i) const { return sqlite3_bind_parameter_name(stmt_, i); }

  // true: a row is ready; false: done. A failure is returned through *status.
  bool Step(Status* status);
  // Runs to completion; Ok or the failure.
  Status Run();

  std::string Text(int col) const;
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int Columns() const { return sqlite3_column_count(stmt_); }

 private:
  Db& db_;
  sqlite3_stmt* stmt_;
};

class Db final {
 public:
  // Opens (and with `create`, creates) the file; sets busy_timeout, foreign keys and the
  // synchronous level, and with `create` WAL (a file's journal mode is otherwise left as it
  // is: WAL persists in the file). Unavailable when it cannot.
  static StatusOr<std::unique_ptr<Db>> Open(const std::string& path, bool create, bool durable);
  ~Db();

  // A cached prepared statement for `sql` (prepared on first use).
  StatusOr<std::unique_ptr<Stmt>> Prepare(const std::string& sql);
  // The same for a statement written in another spelling: prepared as rewrite(sql) on first
  // use, then found by `sql` itself, so the rewrite runs once per statement, not per use.
  // Every call passes the same `rewrite`.
  using Rewrite = std::string (*)(const std::string&);
  StatusOr<std::unique_ptr<Stmt>> Prepare(const std::string& sql, Rewrite rewrite);
  Status Exec(const char* sql);
  // A statement that returns no rows (BEGIN, COMMIT, SAVEPOINT), run as a cached prepared
  // statement: Exec (sqlite3_exec) parses it again each time, and the writer runs these for
  // every delivery.
  Status Run(const std::string& sql);
  int64_t Changes() const { return sqlite3_changes64(db_); }
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  bool InTransaction() const { return !sqlite3_get_autocommit(db_); }
  sqlite3* raw() { return db_; }

  // The Status for a failed SQLite call, with SQLite's own message.
  Status Error(int rc, std::string_view what) const;

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
  std::unordered_map<std::string, sqlite3_stmt*> rewritten_;  // by the statement before rewrite
};

// BEGIN IMMEDIATE ... COMMIT; rolls back in the destructor unless Commit() succeeded.
// IMMEDIATE: a deferred transaction that later upgrades to a write fails at once with
// SQLITE_BUSY whatever the busy timeout; an immediate one waits for the lock up front.
class Transaction final {
 public:
  explicit Transaction(Db& db) : db_(db) {}
  Status Begin() {
    Status s = db_.Run(kBegin);
    open_ = s.ok();
    return s;
  }
  Status Commit() {
    Status s = db_.Run(kCommit);
    if (s.ok()) open_ = false;
    return s;
  }
  ~Transaction() {
    if (open_ && db_.InTransaction()) (void)db_.Run(kRollback);
  }

 private:
  inline static const std::string kBegin = "BEGIN IMMEDIATE";
  inline static const std::string kCommit = "COMMIT";
  inline static const std::string kRollback = "ROLLBACK";

  Db& db_;
  bool open_ = false;
};

}  // namespace hookbox::sqlite
