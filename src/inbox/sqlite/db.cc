// SQLite connection, statement cache and error mapping (see db.h).
#include "inbox/sqlite/db.h"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "inbox/filter.h"

namespace hookbox::sqlite {
namespace {

// hookbox_pointer(body, pointer): the filter's `--where POINTER=VALUE` (inbox/backend.h,
// FilterCondition), JsonPointerValue as SQL: text, or NULL when the body is not JSON or the
// member is not a string, number or boolean. Never an error for what a body holds; a pointer
// that does not parse (the filter parsed it already) selects nothing. The pointer is the
// same for every row of a query, so its tokens are parsed once and kept as SQLite's
// auxiliary data of that argument.
void PointerFunction(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  if (argc != 2 || sqlite3_value_type(argv[0]) == SQLITE_NULL ||
      sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    sqlite3_result_null(ctx);
    return;
  }
  using Tokens = std::vector<std::string>;
  const auto* kept = static_cast<const Tokens*>(sqlite3_get_auxdata(ctx, 1));
  std::optional<Tokens> parsed;
  if (kept == nullptr) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(argv[1]));
    auto tokens = ParseJsonPointer(
        std::string_view(p ? p : "", static_cast<size_t>(sqlite3_value_bytes(argv[1]))));
    if (!tokens.ok()) {
      sqlite3_result_null(ctx);
      return;
    }
    parsed = *std::move(tokens);
  }
  const void* body = sqlite3_value_blob(argv[0]);
  const size_t size = static_cast<size_t>(sqlite3_value_bytes(argv[0]));
  auto value = JsonPointerValue(std::string_view(body ? static_cast<const char*>(body) : "", size),
                                kept ? *kept : *parsed);
  if (value) {
    sqlite3_result_text64(ctx, value->data(), value->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  } else {
    sqlite3_result_null(ctx);
  }
  // Last: SQLite may destroy the data within this call (sqlite3_set_auxdata's contract).
  if (parsed) {
    sqlite3_set_auxdata(ctx, 1, new Tokens(*std::move(parsed)),
                        [](void* t) { delete static_cast<Tokens*>(t); });
  }
}

}  // namespace

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
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      // Contention, not a fault: quiet in the storage log and counter (ops/storage_health.h).
      return Status::Unavailable(Status::UnavailableKind::kBusy, "storage busy", msg);
    case SQLITE_FULL:
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
  // Deterministic: the same body and pointer give the same value, so SQLite may use it in
  // an index or a partial index's condition; innocuous: it reads nothing but its arguments.
  rc = sqlite3_create_function_v2(raw, "hookbox_pointer", 2,
                                  SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nullptr,
                                  PointerFunction, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    return Status::Unavailable("cannot open database",
                               path + ": hookbox_pointer: " + sqlite3_errmsg(raw));
  }
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
  for (auto* cache : {&cache_, &rewritten_}) {
    for (auto& [sql, stmt] : *cache) sqlite3_finalize(stmt);
  }
  sqlite3_close(db_);
}

StatusOr<std::unique_ptr<Stmt>> Db::Prepare(const std::string& sql) {
  return Prepare(sql, nullptr);
}

StatusOr<std::unique_ptr<Stmt>> Db::Prepare(const std::string& sql, Rewrite rewrite) {
  auto& cache = rewrite ? rewritten_ : cache_;
  auto it = cache.find(sql);
  if (it == cache.end()) {
    const std::string text = rewrite ? rewrite(sql) : sql;
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, text.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(rc, "prepare");
    it = cache.emplace(sql, stmt).first;
  }
  return std::make_unique<Stmt>(*this, it->second);
}

Status Db::Run(const std::string& sql) {
  StatusOr<std::unique_ptr<Stmt>> q = Prepare(sql);
  if (!q.ok()) return q.status();
  return (*q)->Run();
}

Status Db::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc == SQLITE_OK) return Status::Ok();
  // The message quotes the statement's start, not a whole script (a migration is pages of
  // SQL): its first line, cut at 60 characters.
  std::string_view head(sql);
  head = head.substr(0, head.find('\n'));
  return Error(rc, head.size() > 60 ? std::string(head.substr(0, 60)) + "…" : std::string(head));
}

}  // namespace hookbox::sqlite
