// sqlite/db.cc's error mapping: contention is Unavailable "storage busy" (quiet, retried:
// ops/storage_health.h), a fault is Unavailable "storage unavailable"; and the SQLite inbox's
// WAL size (Inbox::WalBytes, the hookbox_wal_bytes gauge); the status checks' rewrite in
// place (migration 0011), on a new file and on one written by an older binary.
#include "inbox/sqlite/db.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "inbox/inbox.h"
#include "inbox/migration.h"
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

// One integer from a raw connection's query.
int64_t Scalar(sqlite::Db& db, const std::string& sql) {
  auto q = db.Prepare(sql);
  REQUIRE(q.ok());
  Status s;
  REQUIRE((*q)->Step(&s));
  return (*q)->Int(0);
}

// How many temporary b-trees the connection's program for `sql` opens (EXPLAIN): one for
// each IN list of more than two constants that a CHECK evaluates.
// (A statement of its own, not the connection's cache: SQLite 3.40 crashed listing a cached
// EXPLAIN again after the schema changed under it.)
int64_t EphemeralTables(sqlite::Db& db, const std::string& sql) {
  sqlite3_stmt* q = nullptr;
  REQUIRE(sqlite3_prepare_v2(db.raw(), ("EXPLAIN " + sql).c_str(), -1, &q, nullptr) == SQLITE_OK);
  int64_t n = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    const auto* opcode = reinterpret_cast<const char*>(sqlite3_column_text(q, 1));
    n += opcode != nullptr && std::string(opcode) == "OpenEphemeral" ? 1 : 0;
  }
  sqlite3_finalize(q);
  return n;
}

const char* const kInsertInbox =
    "INSERT INTO inbox (endpoint, event_id, id_source, body_sha256, headers, body, status,"
    " received_at) VALUES ('ep', 'e1', 'header:X', 'h', '{}', x'00', '%s', 't')";

std::string InsertInbox(const std::string& status) {
  std::string sql = kInsertInbox;
  return sql.replace(sql.find("%s"), 2, status);
}

// Each status check refuses a value it does not list and takes those it lists.
void ChecksHold(sqlite::Db& db) {
  CHECK_FALSE(db.Exec(InsertInbox("bogus").c_str()).ok());
  REQUIRE(db.Exec(InsertInbox("ignored").c_str()).ok());
  const int64_t inbox_id = Scalar(db, "SELECT max(id) FROM inbox");
  const std::string job = "INSERT INTO jobs (inbox_id, handler, status, next_attempt_at) VALUES (" +
                          std::to_string(inbox_id) + ", 'h', '%s', 't')";
  for (const auto& [status, ok] : {std::pair{"bogus", false}, std::pair{"dead", true}}) {
    std::string sql = job;
    CHECK(db.Exec(sql.replace(sql.find("%s"), 2, status).c_str()).ok() == ok);
  }
  const int64_t job_id = Scalar(db, "SELECT max(id) FROM jobs");
  for (const char* outcome : {"'bogus'", "'timeout'", "NULL"}) {
    const std::string sql = "INSERT INTO attempts (job, number, started_at, outcome) VALUES (" +
                            std::to_string(job_id) + ", 1, 't', " + outcome + ")";
    CHECK(db.Exec(sql.c_str()).ok() == (std::string(outcome) != "'bogus'"));
  }
  CHECK_FALSE(
      db.Exec("INSERT INTO handler_state (endpoint, handler, circuit) VALUES ('ep', 'h', 'x')")
          .ok());
  CHECK(db.Exec("INSERT INTO handler_state (endpoint, handler, circuit) VALUES ('ep', 'h', "
                "'half-open')")
            .ok());
}

}  // namespace

TEST_CASE("sqlite schema: the status checks build no temporary b-tree, and still refuse") {
  TempFile f;
  REQUIRE(OpenInbox({f.path, true, true}).ok());
  auto db = sqlite::Db::Open(f.path, false, true);
  REQUIRE(db.ok());
  CHECK(EphemeralTables(**db, InsertInbox("pending")) == 0);
  CHECK(EphemeralTables(**db, "UPDATE jobs SET status = 'done' WHERE id = 1") == 0);
  CHECK(EphemeralTables(**db, "UPDATE attempts SET outcome = 'ok' WHERE id = 1") == 0);
  CHECK(EphemeralTables(**db, "UPDATE handler_state SET circuit = 'open'") == 0);
  ChecksHold(**db);
}

TEST_CASE("sqlite schema: a file of the older binary is rewritten in place, rows kept") {
  TempFile f;
  // The file as the binary before migration 0011 left it, with a row and its job; and a
  // connection (another process's) that has read its schema.
  auto old = sqlite::Db::Open(f.path, true, true);
  REQUIRE(old.ok());
  REQUIRE((*old)
              ->Exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                     "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
              .ok());
  for (const Migration& m : kSqliteMigrations) {
    if (m.version >= 11) continue;
    REQUIRE((*old)->Exec(m.sql).ok());
    REQUIRE((*old)
                ->Exec(("INSERT INTO schema_migrations VALUES (" + std::to_string(m.version) +
                        ", 'm', 't')")
                           .c_str())
                .ok());
  }
  REQUIRE((*old)->Exec(InsertInbox("pending").c_str()).ok());
  REQUIRE((*old)
              ->Exec("INSERT INTO jobs (inbox_id, handler, status, next_attempt_at)"
                     " VALUES (1, 'h', 'pending', 't')")
              .ok());
  CHECK(EphemeralTables(**old, InsertInbox("pending")) == 1);  // the IN list's b-tree

  std::vector<std::string> applied;
  REQUIRE(OpenInbox({f.path, true, true}, &applied).ok());
  CHECK(applied ==
        std::vector<std::string>{"0011_checks_without_in_lists", "0012_inbox_by_resource_partial"});
  CHECK(Scalar(**old, "SELECT count(*) FROM inbox i JOIN jobs j ON j.inbox_id = i.id") == 1);
  auto q = (*old)->Prepare("PRAGMA integrity_check");
  REQUIRE(q.ok());
  Status s;
  REQUIRE((*q)->Step(&s));
  CHECK((*q)->Text(0) == "ok");
  q->reset();
  // The connection opened before the migration reads the new definitions too: the schema
  // version moved on.
  CHECK(EphemeralTables(**old, InsertInbox("pending")) == 0);
  REQUIRE((*old)->Exec("DELETE FROM jobs").ok());
  REQUIRE((*old)->Exec("DELETE FROM inbox").ok());
  ChecksHold(**old);
}

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
