// The Inbox contract, OpenInbox and the database itself (inbox.h): a database that cannot
// be opened, an open without create that only reads, migrations applied once by replicas
// starting at once, a database recorded under the older per-backend migration numbers,
// SQLite's write-ahead log under continuous writes (WalBytes), and Ping. Part of the
// storage contract suite, on SQLite and PostgreSQL (tests/inbox/contract.h).
#include <sqlite3.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "inbox/inbox.h"
#include "inbox/migration.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

namespace {

// Statements through a separate connection, as an operator (or an older binary) runs them.
void ExecOn(const TestInbox& t, const std::string& sql) {
  if (OnPostgres()) {
    REQUIRE(t.pg->Query(sql).empty());
    return;
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(t.database.c_str(), &db) == SQLITE_OK);
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

}  // namespace

TEST_CASE("opening a database that cannot be opened is Unavailable") {
  if (OnPostgres()) {
    // No server at that socket; no such database (hookbox never creates one); a database
    // without the hookbox schema, opened by a verb that must not create it.
    auto r = OpenInbox({"postgresql:///x?host=/nonexistent-dir&connect_timeout=2", true, true});
    CHECK(r.status().code() == Status::Code::kUnavailable);
    auto missing = OpenInbox({pgtest::UrlFor("hookbox_no_such_db"), true, true});
    CHECK(missing.status().code() == Status::Code::kUnavailable);
    pgtest::TestDatabase empty;
    auto no_create = OpenInbox({empty.url(), true, false});
    CHECK(no_create.status().code() == Status::Code::kUnavailable);
    CHECK(empty.Count("SELECT count(*) FROM pg_tables WHERE tablename = 'inbox'") == 0);
    auto created = OpenInbox({empty.url(), true, true});
    REQUIRE(created.ok());
    CHECK(empty.Count("SELECT count(*) FROM schema_migrations") >= 1);
    created->reset();
    CHECK(OpenInbox({empty.url(), true, false}).ok());  // now there is a schema
    return;
  }
  auto r = OpenInbox({"/nonexistent-dir/inbox.db", true, true});
  CHECK(r.status().code() == Status::Code::kUnavailable);
  auto no_create = OpenInbox({"/tmp/hookbox-does-not-exist.db", true, false});
  CHECK(no_create.status().code() == Status::Code::kUnavailable);
}

TEST_CASE("opening without create only reads: no write lock, nothing migrated") {
  TestInbox t;
  REQUIRE(Accept(t, MakeEvent("r1")) == Verdict::kAccepted);
  if (!OnPostgres()) {
    // Another process's write transaction holds the write lock for as long as it runs: the
    // operator's verbs open and read meanwhile, rather than wait out the busy timeout and fail.
    sqlite3* other = nullptr;
    REQUIRE(sqlite3_open(t.database.c_str(), &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE; UPDATE inbox SET duplicates = 7", nullptr,
                         nullptr, nullptr) == SQLITE_OK);
    const auto start = std::chrono::steady_clock::now();
    auto reader = OpenInbox({t.database, true, /*create=*/false});
    REQUIRE(reader.ok());
    auto rows = (*reader)->List({});
    REQUIRE(rows.ok());
    CHECK(rows->size() == 1);
    CHECK(std::chrono::steady_clock::now() - start < 2s);  // the busy timeout is 5 s
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(other);
  }
  // A database behind this binary: refused, and left as it was.
  const int64_t recorded = t.Count("SELECT count(*) FROM schema_migrations");
  t.inbox.reset();
  const std::string drop_last =
      "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM "
      "schema_migrations)";
  ExecOn(t, drop_last);
  auto behind = OpenInbox({t.database, true, /*create=*/false});
  CHECK(behind.status().code() == Status::Code::kUnavailable);
  CHECK(behind.status().ToString().find("hookbox migrate") != std::string::npos);
  CHECK(t.Count("SELECT count(*) FROM schema_migrations") == recorded - 1);
}

TEST_CASE("migrations are applied once when several replicas start at once") {
  TestInbox t;
  const int64_t recorded = t.Count("SELECT count(*) FROM schema_migrations");
  CHECK(recorded >= 1);
  // A fresh database, opened by four at once.
  std::unique_ptr<pgtest::TestDatabase> fresh_pg;
  std::string fresh = t.dir + "/fresh.db";
  if (OnPostgres()) {
    fresh_pg = std::make_unique<pgtest::TestDatabase>();
    fresh = fresh_pg->url();
  }
  std::vector<std::thread> openers;
  std::atomic<int> opened{0};
  std::atomic<size_t> applied_total{0};
  std::mutex errors_mu;
  std::vector<std::string> errors;
  for (int i = 0; i < 4; ++i) {
    openers.emplace_back([&] {
      std::vector<std::string> applied;
      auto inbox = OpenInbox({fresh, true, true}, &applied);
      if (inbox.ok()) {
        ++opened;
      } else {
        std::lock_guard lock(errors_mu);
        errors.push_back(inbox.status().ToString());
      }
      applied_total += applied.size();
    });
  }
  for (auto& th : openers) th.join();
  for (const std::string& e : errors) INFO(e);
  INFO((errors.empty() ? "" : errors.front()));
  CHECK(opened == 4);
  CHECK(applied_total == static_cast<size_t>(recorded));  // each migration by one opener
}

// The SQLite inbox copies its WAL into the database on a thread of its own and starts the
// WAL file over only in a short exclusive turn (WalCheckpointer::Loop in sqlite/checkpoints.cc):
// under writes that never pause, the WAL must still start over, and stay bounded. The WAL header's
// checkpoint sequence number (bytes 12-15, big-endian) counts the times it started over.
// On PostgreSQL the same load runs as a test of grouped accepts with large bodies.
TEST_CASE("continuous writes: the WAL starts over without a pause in the writes, stays bounded") {
  TestInbox t;
  const std::string wal = t.database + "-wal";
  auto restarts = [&]() -> uint32_t {
    std::ifstream f(wal, std::ios::binary);
    unsigned char h[16] = {};
    if (!f.read(reinterpret_cast<char*>(h), sizeof h)) return 0;
    return uint32_t{h[12]} << 24 | uint32_t{h[13]} << 16 | uint32_t{h[14]} << 8 | h[15];
  };
  // 32 KiB bodies: about 9 WAL pages an event, so the WAL passes its restart point (8,000
  // pages) every ~900 events; at most 7,200 events (~65,000 pages: past the forced restart
  // at 32,000 twice), stopping once it has started over twice.
  constexpr int kThreads = 8, kMaxEach = 900;
  const std::string body(32 * 1024, 'x');
  std::atomic<bool> enough{false};
  std::atomic<int> accepted{0}, failed{0};
  std::atomic<uintmax_t> largest{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kMaxEach && !enough; ++n) {
        Event e = MakeEvent("big-" + std::to_string(i) + "-" + std::to_string(n), {"h"}, "",
                            std::nullopt, body + std::to_string(n));
        auto r = t->Accept(e);
        (r.ok() && r->verdict == Verdict::kAccepted ? accepted : failed)++;
        if (OnPostgres() || n % 20 != 0) continue;
        std::error_code ec;
        const uintmax_t size = std::filesystem::file_size(wal, ec);
        if (!ec && size > largest) largest = size;
        if (i == 0 && restarts() >= 2) enough = true;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox") == accepted);
  CHECK(t.Count("SELECT count(*) FROM jobs") == accepted);
  if (OnPostgres()) return;
  INFO("events " << accepted << ", WAL restarts " << restarts() << ", largest WAL " << largest);
  CHECK(restarts() >= 2);
  // Bounded: the forced restart at 32,000 pages (128 MiB) plus the groups that commit while
  // its turn waits for the group in hand.
  CHECK(largest < uintmax_t{160} << 20);
  CHECK(t.Count("SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'") == 1);
}

TEST_CASE("WalBytes: the SQLite inbox's -wal file grows with commits; none on PostgreSQL") {
  TestInbox t;
  auto before = t->WalBytes();
  if (OnPostgres()) {
    CHECK_FALSE(before.has_value());  // PostgreSQL's WAL is the server's
    return;
  }
  REQUIRE(before.has_value());
  for (int i = 0; i < 20; ++i)
    CHECK(Accept(t, MakeEvent("wal-" + std::to_string(i))) == Verdict::kAccepted);
  auto after = t->WalBytes();
  REQUIRE(after.has_value());
  CHECK(*after > *before);
}

TEST_CASE("Ping (/readyz): ok while the inbox's tables are there, a failure once they are gone") {
  TestInbox t;
  REQUIRE(t->Ping().ok());
  const char* drop = "DROP TABLE schema_migrations";
  if (t.pg) {
    REQUIRE(t.pg->Query(drop).find("ERROR") == std::string::npos);
  } else {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(t.database.c_str(), &db) == SQLITE_OK);
    const int rc = sqlite3_exec(db, drop, nullptr, nullptr, nullptr);
    sqlite3_close(db);
    REQUIRE(rc == SQLITE_OK);
  }
  CHECK_FALSE(t->Ping().ok());
}

namespace {

// The rows as a binary before the shared numbers wrote them: its n-th file was number n
// ("0004_inbox_by_body" for SQLite's 0005). Ascending: each row moves down into a number
// the one before it left.
void RecordOldNumbers(const TestInbox& t, const std::vector<Migration>& ms) {
  for (size_t i = 0; i < ms.size(); ++i) {
    char old_name[64];
    snprintf(old_name, sizeof old_name, "%04zu%s", i + 1, ms[i].name + 4);
    ExecOn(t, "UPDATE schema_migrations SET version = " + std::to_string(i + 1) + ", name = '" +
                  old_name + "' WHERE version = " + std::to_string(ms[i].version));
  }
}

std::string RecordedNames(const TestInbox& t) {
  std::string names;
  const std::vector<Migration>& ms = OnPostgres() ? kPostgresMigrations : kSqliteMigrations;
  for (const Migration& m : ms) {
    if (t.Count("SELECT count(*) FROM schema_migrations WHERE version = " +
                std::to_string(m.version) + " AND name = '" + m.name + "'") == 1) {
      names += std::string(m.name) + " ";
    }
  }
  return names;
}

}  // namespace

TEST_CASE("a database of the per-backend numbers is read in the shared ones, then renumbered") {
  TestInbox t;
  REQUIRE(t.inbox->Accept(MakeEvent("kept")).ok());
  t.inbox.reset();
  const std::vector<Migration>& ms = OnPostgres() ? kPostgresMigrations : kSqliteMigrations;
  std::string all;
  for (const Migration& m : ms) all += std::string(m.name) + " ";
  REQUIRE(RecordedNames(t) == all);
  RecordOldNumbers(t, ms);
  CHECK(t.Count("SELECT max(version) FROM schema_migrations") == static_cast<int64_t>(ms.size()));
  CHECK(RecordedNames(t) != all);

  // The operator's verbs read it as up to date, and leave it as it is.
  auto reader = OpenInbox({t.database, true, /*create=*/false});
  REQUIRE(reader.ok());
  CHECK((*reader)->List({})->size() == 1);
  reader->reset();
  CHECK(t.Count("SELECT max(version) FROM schema_migrations") == static_cast<int64_t>(ms.size()));

  // `migrate` (or `serve`) applies nothing and gives the rows the shared numbers.
  std::vector<std::string> applied;
  auto migrated = OpenInbox({t.database, true, true}, &applied);
  REQUIRE(migrated.ok());
  CHECK(applied.empty());
  CHECK(RecordedNames(t) == all);
  CHECK(t.Count("SELECT count(*) FROM schema_migrations") == static_cast<int64_t>(ms.size()));
  CHECK((*migrated)->List({})->size() == 1);
}

TEST_CASE("a database of the per-backend numbers gets what it lacks") {
  if (OnPostgres()) return;  // SQLite's last migration can run again; PostgreSQL's cannot
  TestInbox t;
  t.inbox.reset();
  // As an older binary left a file at its 9th of 10 migrations: every row under its old
  // number, the last (0010_inbox_by_resource_partial, now 0012) not applied.
  const std::vector<Migration>& ms = kSqliteMigrations;
  RecordOldNumbers(t, ms);
  ExecOn(t, "DELETE FROM schema_migrations WHERE version = " + std::to_string(ms.size()));
  CHECK(OpenInbox({t.database, true, /*create=*/false}).status().code() ==
        Status::Code::kUnavailable);
  std::vector<std::string> applied;
  REQUIRE(OpenInbox({t.database, true, true}, &applied).ok());
  CHECK(applied == std::vector<std::string>{ms.back().name});
  CHECK(t.Count("SELECT max(version) FROM schema_migrations") == ms.back().version);
  CHECK(t.Count("SELECT count(*) FROM schema_migrations") == static_cast<int64_t>(ms.size()));
}
