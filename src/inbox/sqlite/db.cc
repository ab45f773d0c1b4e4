// SQLite connection, statement cache and error mapping (see db.h).
#include "inbox/sqlite/db.h"

#include <chrono>
#include <thread>
#include <vector>

namespace hookbox::sqlite {

bool Stmt::Step(Status* status) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) *status = db_.Error(rc, "step");
  return false;
}

Status Stmt::Run() {
  Status s;
  while (Step(&s)) {
  }
  return s;
}

std::string Stmt::Text(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

Status Db::Error(int rc, std::string_view what) const {
  std::string msg = std::string(what) + ": " + sqlite3_errmsg(db_);
  switch (rc & 0xff) {
    case SQLITE_FULL:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
      return Status::Unavailable("storage unavailable", msg);
    default:
      return Status::Internal("storage error", msg);
  }
}

StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& path, bool create, bool durable) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return Status::Unavailable("cannot open database", path + ": " + msg);
  }
  std::unique_ptr<Db> db(new Db(raw));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 5000);
  // WAL: readers (CLI, workers) never block the writer. synchronous=FULL fsyncs the WAL at
  // every commit, so a 200 survives power loss; NORMAL may lose the last commits.
  const char* sync = durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
  // WAL is a property of the file, kept across connections: set by whoever may create it
  // (`serve`, `migrate`). Without `create` (the operator's verbs, the inbox's reader and
  // checkpointer) the file's own mode stands, so a read verb changes nothing in a file that
  // turns out not to be hookbox's, not even its journal mode.
  std::vector<const char*> pragmas = {sync, "PRAGMA foreign_keys=ON"};
  if (create) pragmas.insert(pragmas.begin(), "PRAGMA journal_mode=WAL");
  for (const char* pragma : pragmas) {
    // Switching a new file to WAL needs an exclusive lock, and SQLite answers BUSY without
    // calling the busy handler when it cannot wait without risking a deadlock (several
    // processes opening one new database at once): retried here, for as long as the busy
    // timeout would have waited.
    Status s = db->Exec(pragma);
    for (int waited_ms = 0;
         !s.ok() && waited_ms < 5000 && (sqlite3_errcode(raw) & 0xff) == SQLITE_BUSY;
         waited_ms += 5) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      s = db->Exec(pragma);
    }
    if (!s.ok()) return Status::Unavailable("cannot open database", path + ": " + s.ToString());
  }
  return db;
}

Db::~Db() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

StatusOr<std::unique_ptr<Stmt>> Db::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(rc, "prepare");
    it = cache_.emplace(sql, stmt).first;
  }
  return std::make_unique<Stmt>(*this, it->second);
}

Status Db::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  return rc == SQLITE_OK ? Status::Ok() : Error(rc, sql);
}

}  // namespace hookbox::sqlite
