// sqlite/db.cc's error mapping: contention is Unavailable "storage busy" (quiet, retried:
// ops/storage_health.h), a fault is Unavailable "storage unavailable"; and the SQLite inbox's
// WAL size (Inbox::WalBytes, the hookbox_wal_bytes gauge).
#include "inbox/sqlite/db.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "inbox/inbox.h"
#include "ops/storage_health.h"

namespace hookbox {
namespace {

struct TempFile {
  TempFile() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-db-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    path = dir + "/inbox.db";
  }
  ~TempFile() { std::filesystem::remove_all(dir); }
  std::string dir, path;
};

}  // namespace

TEST_CASE("sqlite errors: a write lock held elsewhere is storage busy, not a fault") {
  TempFile f;
  auto a = sqlite::Db::Open(f.path, true, true);
  REQUIRE(a.ok());
  auto b = sqlite::Db::Open(f.path, false, true);
  REQUIRE(b.ok());
  REQUIRE((*a)->Exec("BEGIN IMMEDIATE").ok());
  sqlite3_busy_timeout((*b)->raw(), 0);
  Status s = (*b)->Exec("BEGIN IMMEDIATE");
  CHECK(s.code() == Status::Code::kUnavailable);
  CHECK(s.what() == "storage busy");
  CHECK(s.unavailable() == Status::UnavailableKind::kBusy);
  CHECK(IsStorageBusy(s));
  CHECK((*a)->Exec("COMMIT").ok());
  // A fault keeps its own name.
  CHECK((*a)->Error(SQLITE_IOERR_FSYNC, "COMMIT").what() == "storage unavailable");
  CHECK((*a)->Error(SQLITE_IOERR_FSYNC, "COMMIT").unavailable() == Status::UnavailableKind::kFault);
  CHECK((*a)->Error(SQLITE_FULL, "COMMIT").what() == "storage unavailable");
}

TEST_CASE("sqlite inbox: WalBytes is the size of the -wal file") {
  TempFile f;
  auto inbox = OpenInbox({f.path, true, true});
  REQUIRE(inbox.ok());
  auto bytes = (*inbox)->WalBytes();
  REQUIRE(bytes.has_value());
  CHECK(*bytes == static_cast<int64_t>(std::filesystem::file_size(f.path + "-wal")));
  CHECK(*bytes > 0);  // the migrations were written to it
}

TEST_CASE("sqlite errors: a failed script is quoted by its first line, not whole") {
  TempFile f;
  auto db = sqlite::Db::Open(f.path, true, true);
  REQUIRE(db.ok());
  // A migration's shape: several statements, the last one bad.
  Status s = (*db)->Exec(
      "CREATE TABLE first_table_of_a_long_migration_script (id INTEGER PRIMARY KEY, name TEXT);\n"
      "CREATE INDEX first_index ON first_table_of_a_long_migration_script (name);\n"
      "CREATE TABLE broken (;\n");
  REQUIRE_FALSE(s.ok());
  const std::string message = s.ToString();
  CHECK(message.find("CREATE TABLE first_table_of_a_long_migration_script (id INTE…") !=
        std::string::npos);
  CHECK(message.find("first_index") == std::string::npos);
  CHECK(message.find("syntax error") != std::string::npos);  // SQLite's own words stay
}

}  // namespace hookbox
