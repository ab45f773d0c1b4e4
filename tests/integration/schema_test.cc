// What the operator's verbs do when they open the inbox (issue 29, defects 3 and 4): the real
// `hookbox` binary against a real SQLite file held by a second real connection, and against
// the throwaway PostgreSQL cluster with real roles and schemas. Read verbs (`inbox list`,
// `show`, `stats`) read: they create nothing, migrate nothing and take no write lock; only
// `serve` and `migrate` migrate.
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>

#include "daemon.h"

using hookbox::testing::AnswerLine;
using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::ReadLines;
using hookbox::testing::RunHookbox;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

namespace {

// One endpoint at /hooks/e whose exec handler appends the event id to {DIR}/ran.
constexpr const char* kConfig = R"(
listen: 127.0.0.1:0
database: "{DB}"
endpoints:
  - name: e
    path: /hooks/e
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/sh, -c, 'echo "$HOOKBOX_EVENT_ID" >> {DIR}/ran']}
)";

// The config of kConfig for `database`, written to dir/name, for the CLI alone.
std::string WriteCliConfig(const TempDir& dir, const std::string& name,
                           const std::string& database) {
  std::string yaml = kConfig;
  yaml.replace(yaml.find("{DB}"), 4, database);
  yaml.replace(yaml.find("{DIR}"), 5, dir.path().string());
  WriteFile(dir / name, yaml);
  return dir / name;
}

CliResult Run(const TempDir& dir, std::vector<std::string> args, const std::string& config) {
  args.emplace_back("-c");
  args.push_back(config);
  return RunHookbox(args, dir.path().string());
}

// A direct sqlite3 connection of the test's own, as another process (a shell's sqlite3, a
// second hookbox) would hold it.
class SqliteConnection {
 public:
  explicit SqliteConnection(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  }
  ~SqliteConnection() { sqlite3_close(db_); }
  int Exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }
  int64_t Count(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr);
    int64_t n = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace

TEST_CASE("sqlite: read verbs succeed while another process holds the write lock") {
  TempDir dir;
  const std::string db = dir / "inbox.db";
  {
    Daemon d(dir, kConfig);
    REQUIRE(AnswerLine(d.Post("/hooks/e", {}, R"({"id":"held-1"})")) == "200 accepted");
    REQUIRE(Eventually([&] { return ReadLines(dir / "ran").size() == 1; }));
  }
  const std::string config = WriteCliConfig(dir, "cli.yaml", db);
  SqliteConnection other(db);
  // A write transaction of another process: it holds the database's write lock until it ends.
  REQUIRE(other.Exec("BEGIN IMMEDIATE") == SQLITE_OK);
  REQUIRE(other.Exec("UPDATE inbox SET duplicates = duplicates WHERE 0") == SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  CliResult list = Run(dir, {"inbox", "list", "--json"}, config);
  CHECK(list.err.empty());
  REQUIRE(list.exit_code == 0);
  CHECK(json::parse(list.out).at(0).at("event_id") == "held-1");
  CliResult show = Run(dir, {"inbox", "show", "e", "held-1", "--json"}, config);
  CHECK(show.exit_code == 0);
  CliResult stats = Run(dir, {"stats", "--json"}, config);
  CHECK(stats.exit_code == 0);
  CliResult dry = Run(dir, {"purge", "--dry-run"}, config);
  CHECK(dry.exit_code == 0);
  // Four verbs, none waiting for the lock (the busy timeout alone is 5 s each).
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(other.Exec("COMMIT") == SQLITE_OK);
}

TEST_CASE("sqlite: a read verb on a database behind the binary refuses and changes nothing") {
  TempDir dir;
  const std::string db = dir / "inbox.db";
  const std::string config = WriteCliConfig(dir, "cli.yaml", db);
  REQUIRE(Run(dir, {"migrate"}, config).exit_code == 0);
  int64_t recorded = 0;
  {
    SqliteConnection c(db);
    recorded = c.Count("SELECT count(*) FROM schema_migrations");
    REQUIRE(recorded >= 2);
    // As if the binary had been upgraded since the last `migrate`.
    REQUIRE(c.Exec("DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM "
                   "schema_migrations)") == SQLITE_OK);
  }
  CliResult list = Run(dir, {"inbox", "list"}, config);
  CHECK(list.exit_code == 2);
  CHECK(list.err.find("hookbox migrate") != std::string::npos);
  {
    SqliteConnection c(db);
    CHECK(c.Count("SELECT count(*) FROM schema_migrations") == recorded - 1);
  }

  // A SQLite file that is not hookbox's: nothing created in it.
  const std::string foreign = dir / "foreign.db";
  {
    sqlite3* f = nullptr;
    REQUIRE(sqlite3_open(foreign.c_str(), &f) == SQLITE_OK);
    REQUIRE(sqlite3_exec(f, "CREATE TABLE notes (x)", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(f);
  }
  CliResult on_foreign = Run(dir, {"stats"}, WriteCliConfig(dir, "foreign.yaml", foreign));
  CHECK(on_foreign.exit_code == 2);
  CHECK(on_foreign.err.find("hookbox migrate") != std::string::npos);
  SqliteConnection f(foreign);
  CHECK(f.Count("SELECT count(*) FROM sqlite_master WHERE type = 'table'") == 1);
}
