// `hookbox backup FILE`: a consistent copy of a live SQLite inbox, safe beside `serve`.
// SQLite's VACUUM INTO reads the database in one read transaction (WAL: the daemon's
// writers go on; the copy is the inbox as of the moment that transaction began, every
// event answered 200 before it included) and writes a compact new file. The copy is made
// as FILE.partial (mode 0600: it holds every stored body and header), checked with
// `PRAGMA quick_check`, synced, then renamed to FILE and the directory synced, so FILE
// exists only once it is whole. PostgreSQL has its own tools (README: pg_dump).
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "base/status_macros.h"
#include "cli/cli.h"
#include "inbox/inbox.h"
#include "ops/terminal.h"

namespace hookbox::cli {
namespace {

// A connection closed on every path.
struct Connection {
  sqlite3* db = nullptr;
  ~Connection() { sqlite3_close_v2(db); }
  std::string Error() const { return db ? sqlite3_errmsg(db) : "out of memory"; }
};

Status Fail(const std::string& what, const std::string& detail) {
  return Status::Unavailable(what, detail);
}

// VACUUM INTO `to` (an empty file) from `from`; waits up to 5 s for a lock. It only reads
// `from`, but opens it read-write: a read-only connection to a WAL database cannot start
// when the daemon is not running and its -shm file is gone.
Status CopyInto(const std::string& from, const std::string& to) {
  Connection c;
  if (sqlite3_open_v2(from.c_str(), &c.db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    return Fail("cannot open the inbox", c.Error());
  }
  sqlite3_busy_timeout(c.db, 5000);
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(c.db, "VACUUM INTO ?1", -1, &stmt, nullptr) != SQLITE_OK) {
    return Fail("cannot copy the inbox", c.Error());
  }
  sqlite3_bind_text(stmt, 1, to.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(stmt);
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return Fail("cannot copy the inbox", c.Error());
  return Status::Ok();
}

// quick_check of the copy, and its number of inbox rows.
StatusOr<int64_t> CheckCopy(const std::string& path) {
  Connection c;
  if (sqlite3_open_v2(path.c_str(), &c.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    return Fail("cannot open the copy", c.Error());
  }
  std::string verdict;
  int64_t rows = -1;
  for (const char* sql : {"PRAGMA quick_check", "SELECT count(*) FROM inbox"}) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(c.db, sql, -1, &stmt, nullptr) != SQLITE_OK) {
      return Fail("cannot check the copy", c.Error());
    }
    if (sqlite3_step(stmt) == SQLITE_ROW) {
      if (verdict.empty()) {
        const unsigned char* text = sqlite3_column_text(stmt, 0);
        verdict = text ? reinterpret_cast<const char*>(text) : "";
      } else {
        rows = sqlite3_column_int64(stmt, 0);
      }
    }
    sqlite3_finalize(stmt);
  }
  if (verdict != "ok") return Fail("the copy failed its check", verdict);
  return rows;
}

// fsync of a file or a directory.
Status SyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Fail("cannot sync " + path, std::strerror(errno));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Fail("cannot sync " + path, std::strerror(errno));
  return Status::Ok();
}

// The copy as FILE.partial, checked and synced, then renamed; rows copied.
StatusOr<int64_t> MakeBackup(const std::string& database, const std::string& file) {
  const std::string partial = file + ".partial";
  std::error_code ec;
  std::filesystem::remove(partial, ec);  // a crashed run's leftover: never a backup
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Fail("cannot create " + partial, std::strerror(errno));
  ::close(fd);
  auto rows = [&]() -> StatusOr<int64_t> {
    RETURN_IF_ERROR(CopyInto(database, partial));
    ASSIGN_OR_RETURN(const int64_t n, CheckCopy(partial));
    RETURN_IF_ERROR(SyncPath(partial));
    if (std::rename(partial.c_str(), file.c_str()) != 0) {
      return Fail("cannot rename " + partial + " to " + file, std::strerror(errno));
    }
    const std::filesystem::path dir = std::filesystem::absolute(file).parent_path();
    RETURN_IF_ERROR(SyncPath(dir.string()));
    return n;
  }();
  if (!rows.ok()) std::filesystem::remove(partial, ec);
  return rows;
}

}  // namespace

int Backup(const std::string& config_path, const std::string& file) {
  // PostgreSQL is refused before any connection is tried. (A config with errors goes on to
  // LoadAndOpen, which reports every one.)
  if (LoadResult peek = LoadConfigFile(config_path, {.resolve_secrets = false});
      peek.config && IsPostgresDatabase(peek.config->database)) {
    std::cerr << "hookbox: backup copies a SQLite inbox; for PostgreSQL use pg_dump (README, "
                 "\"Upgrade and back up\")\n";
    return kExitUsage;
  }
  // The config and the inbox as every verb opens them: a wrong database, or a schema this
  // binary does not know, is exit 2 before anything is written.
  Opened opened = LoadAndOpen(config_path, {});
  if (!opened.inbox) return opened.exit_code;
  const std::string& database = opened.config->database;
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    std::cerr << "hookbox: " << TerminalSafe(file) << " exists; a backup never overwrites\n";
    return kExitUsage;
  }
  const auto started = std::chrono::steady_clock::now();
  auto rows = MakeBackup(database, file);
  if (!rows.ok()) return ReportFailure(rows.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("backed up %lld inbox rows to %s (%lld bytes) in %.1f s; quick_check ok\n",
              static_cast<long long>(*rows), TerminalSafe(file).c_str(),
              static_cast<long long>(std::filesystem::file_size(file, ec)), seconds);
  return kExitOk;
}

}  // namespace hookbox::cli
