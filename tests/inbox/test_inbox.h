// The fixture of the Inbox contract suites (contract.h's files, handler_state_test.cc): a fresh
// database per test, SQLite in a temporary directory, or, when ctest runs the suite as
// `inbox_postgres` (HOOKBOX_TEST_BACKEND=postgres), a database of its own on the throwaway
// PostgreSQL cluster. Every suite of the contract runs on both backends through it.
#pragma once

#include <sqlite3.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "inbox/inbox.h"
#include "tests/pg/pg_testing.h"

namespace hookbox {

inline bool OnPostgres() {
  const char* backend = std::getenv("HOOKBOX_TEST_BACKEND");
  return backend && std::string(backend) == "postgres";
}

struct TestInbox {
  TestInbox() {
    if (OnPostgres()) {
      pg = std::make_unique<pgtest::TestDatabase>();
      database = pg->url();
    } else {
      std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-inbox-XXXXXX").string();
      dir = mkdtemp(tmpl.data());
      database = dir + "/inbox.db";
    }
    inbox = OpenAnother();
  }
  ~TestInbox() {
    inbox.reset();
    pg.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
  Inbox* operator->() { return inbox.get(); }

  // Another Inbox on the same database, as a second hookbox replica (or process) opens it.
  std::unique_ptr<Inbox> OpenAnother() const {
    auto opened = OpenInbox({database, true, true});
    REQUIRE(opened.ok());
    return std::move(*opened);
  }

  // A query on the database through a separate connection, as an operator would run it.
  int64_t Count(const std::string& sql) const {
    if (pg) return pg->Count(sql);
    sqlite3* db = nullptr;
    sqlite3_open_v2(database.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
  }

  std::string dir, database;
  std::unique_ptr<pgtest::TestDatabase> pg;
  std::unique_ptr<Inbox> inbox;
};

}  // namespace hookbox
