// What the operator's verbs do when they open the inbox: the real `hookbox` binary against a
// real SQLite file held by a second real connection, and against the throwaway PostgreSQL
// cluster with real roles and schemas. Read verbs (`inbox list`, `show`, `stats`) read: they
// create nothing, migrate nothing, take no write lock and need no CREATE privilege; only
// `serve` and `migrate` migrate. On PostgreSQL, hookbox resolves its schema once at open and
// pins it, so a schema named after the role (PostgreSQL's own recommended pattern) can never
// fork the inbox. The PostgreSQL cases are tagged [.postgres]: run by `integration_postgres`,
// which requires the cluster fixture.
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>

#include "daemon.h"
#include "tests/pg/pg_testing.h"

using hookbox::pgtest::TestDatabase;
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
admin_listen: ""
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

// ---- PostgreSQL

namespace {

// A login role of the test cluster (roles are cluster-wide: the name is unique to this
// process), dropped with what it owns when this goes out of scope.
class TestRole {
 public:
  explicit TestRole(const TestDatabase& db) : db_(db) {
    static std::atomic<int> counter{0};
    name_ = "hookbox_role_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
    const std::string r = hookbox::pgtest::Query(hookbox::pgtest::UrlFor("postgres"),
                                                 "CREATE ROLE " + name_ + " LOGIN");
    if (!r.empty()) throw std::runtime_error("CREATE ROLE failed: " + r);
  }
  ~TestRole() {
    try {
      db_.Query("DROP OWNED BY " + name_ + " CASCADE");
      hookbox::pgtest::Query(hookbox::pgtest::UrlFor("postgres"), "DROP ROLE IF EXISTS " + name_);
    } catch (...) {
      // The cluster is gone: nothing left to drop.
    }
  }
  TestRole(const TestRole&) = delete;
  TestRole& operator=(const TestRole&) = delete;

  const std::string& name() const { return name_; }
  // The database's URL, connecting as this role; `extra` is appended ("&options=...").
  std::string Url(const std::string& extra = "") const {
    std::string url = db_.url();
    url.replace(url.find("user=postgres"), 13, "user=" + name_);
    return url + extra;
  }

 private:
  const TestDatabase& db_;
  std::string name_;
};

int64_t TablesIn(const TestDatabase& db, const std::string& schema) {
  return db.Count("SELECT count(*) FROM pg_tables WHERE schemaname = '" + schema + "'");
}

}  // namespace

TEST_CASE("postgres: a schema named after the role, created after the tables, forks nothing",
          "[.postgres]") {
  TestDatabase db;
  TestRole role(db);
  const std::string& r = role.name();
  REQUIRE(db.Query("GRANT CREATE, USAGE ON SCHEMA public TO " + r).empty());
  TempDir dir;
  {
    // The tables go to public: the role has no schema of its own yet.
    Daemon d(dir, kConfig, role.Url());
    REQUIRE(AnswerLine(d.Post("/hooks/e", {}, R"({"id":"fork-1"})")) == "200 accepted");
    REQUIRE(Eventually([&] { return ReadLines(dir / "ran").size() == 1; }));
    REQUIRE(Eventually([&] {
      return db.Count("SELECT count(*) FROM public.inbox WHERE status = 'processed'") == 1;
    }));
  }
  REQUIRE(TablesIn(db, "public") >= 5);
  // PostgreSQL's recommended pattern: now "$user" on the default search_path names a schema.
  REQUIRE(db.Query("CREATE SCHEMA " + r + " AUTHORIZATION " + r).empty());

  const std::string config = WriteCliConfig(dir, "cli.yaml", role.Url());
  CliResult list = Run(dir, {"inbox", "list", "--json"}, config);
  INFO(list.err);
  REQUIRE(list.exit_code == 0);
  CHECK(json::parse(list.out).size() == 1);
  CHECK(TablesIn(db, r) == 0);  // a read verb created nothing

  {
    // A restart: the processed event redelivered is a duplicate, and its handler does not run.
    Daemon d(dir, kConfig, role.Url());
    CHECK(AnswerLine(d.Post("/hooks/e", {}, R"({"id":"fork-1"})")) == "200 duplicate");
    CHECK(AnswerLine(d.Post("/hooks/e", {}, R"({"id":"fork-2"})")) == "200 accepted");
    REQUIRE(Eventually([&] { return ReadLines(dir / "ran").size() == 2; }));
    CHECK(ReadLines(dir / "ran") == std::vector<std::string>{"fork-1", "fork-2"});
  }
  CHECK(TablesIn(db, r) == 0);
  CHECK(db.Count("SELECT count(*) FROM public.inbox") == 2);

  // A second inbox made on purpose in the role's schema, pinned by the URL: now two schemas on
  // the role's default search_path hold hookbox tables, and every verb refuses to guess.
  const std::string pinned =
      WriteCliConfig(dir, "pinned.yaml", role.Url("&options=-csearch_path%3D" + r));
  CliResult made = Run(dir, {"migrate"}, pinned);
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  CHECK(TablesIn(db, r) >= 5);
  CHECK(Run(dir, {"inbox", "list", "--json"}, pinned).out == "[]\n");
  CliResult ambiguous = Run(dir, {"inbox", "list"}, config);
  CHECK(ambiguous.exit_code == 2);
  CHECK(ambiguous.err.find("public") != std::string::npos);
  CHECK(ambiguous.err.find(r) != std::string::npos);
  CHECK(ambiguous.err.find("search_path") != std::string::npos);
  CHECK(Run(dir, {"migrate"}, config).exit_code == 2);
}

TEST_CASE("postgres: a role without CREATE runs the read verbs; they create nothing",
          "[.postgres]") {
  TestDatabase db;
  TestRole owner(db), reader(db);
  // The reverse layout: the tables in the owner's own schema, public left empty.
  REQUIRE(db.Query("CREATE SCHEMA " + owner.name() + " AUTHORIZATION " + owner.name()).empty());
  REQUIRE(db.Query("REVOKE CREATE ON SCHEMA public FROM PUBLIC").empty());
  TempDir dir;
  {
    Daemon d(dir, kConfig, owner.Url());
    REQUIRE(AnswerLine(d.Post("/hooks/e", {}, R"({"id":"read-1"})")) == "200 accepted");
    REQUIRE(Eventually([&] { return ReadLines(dir / "ran").size() == 1; }));
    // Its finish committed before the daemon goes (by SIGKILL): a lease it left would be
    // released only once its heartbeat expires (30 s), past the server daemon's wait below.
    REQUIRE(Eventually([&] {
      return db.Count("SELECT count(*) FROM " + owner.name() +
                      ".inbox WHERE status = 'processed'") == 1;
    }));
  }
  REQUIRE(TablesIn(db, owner.name()) >= 5);
  REQUIRE(TablesIn(db, "public") == 0);
  // What the README asks for the read verbs: USAGE on the schema and SELECT on its tables.
  REQUIRE(db.Query("GRANT USAGE ON SCHEMA " + owner.name() + " TO " + reader.name()).empty());
  REQUIRE(db.Query("GRANT SELECT ON ALL TABLES IN SCHEMA " + owner.name() + " TO " + reader.name())
              .empty());

  // The reader's own search_path ("$user", public) does not reach the owner's schema: a clear
  // refusal naming where the tables are, not an empty list.
  const std::string unpinned = WriteCliConfig(dir, "unpinned.yaml", reader.Url());
  CliResult lost = Run(dir, {"inbox", "list"}, unpinned);
  CHECK(lost.exit_code == 2);
  CHECK(lost.err.find(owner.name()) != std::string::npos);
  CHECK(lost.err.find("search_path") != std::string::npos);

  const std::string pinned =
      WriteCliConfig(dir, "pinned.yaml", reader.Url("&options=-csearch_path%3D" + owner.name()));
  CliResult list = Run(dir, {"inbox", "list", "--json"}, pinned);
  INFO(list.err);
  REQUIRE(list.exit_code == 0);
  CHECK(json::parse(list.out).at(0).at("event_id") == "read-1");
  CHECK(Run(dir, {"inbox", "show", "e", "read-1", "--json"}, pinned).exit_code == 0);
  CHECK(Run(dir, {"stats", "--json"}, pinned).exit_code == 0);
  CHECK(Run(dir, {"purge", "--dry-run"}, pinned).exit_code == 0);
  CHECK(TablesIn(db, "public") == 0);

  // Given CREATE on public, the reader's `migrate` would have made a second, empty inbox there:
  // refused instead, while another schema holds the tables and nothing pins the path.
  REQUIRE(db.Query("GRANT CREATE ON SCHEMA public TO " + reader.name()).empty());
  CliResult second = Run(dir, {"migrate"}, unpinned);
  CHECK(second.exit_code == 2);
  CHECK(second.err.find(owner.name()) != std::string::npos);
  CHECK(TablesIn(db, "public") == 0);

  // `serve` as a role without CREATE, on an up-to-date schema: what the README asks suffices.
  TestRole server(db);
  const std::string& o = owner.name();
  REQUIRE(db.Query("GRANT USAGE ON SCHEMA " + o + " TO " + server.name() +
                   "; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + o + " TO " +
                   server.name() + "; GRANT USAGE ON ALL SEQUENCES IN SCHEMA " + o + " TO " +
                   server.name())
              .empty());
  {
    Daemon d(dir, kConfig, server.Url("&options=-csearch_path%3D" + o));
    CHECK(AnswerLine(d.Post("/hooks/e", {}, R"({"id":"read-1"})")) == "200 duplicate");
    CHECK(AnswerLine(d.Post("/hooks/e", {}, R"({"id":"read-2"})")) == "200 accepted");
    REQUIRE(Eventually([&] { return ReadLines(dir / "ran").size() == 2; }));
    const bool processed = Eventually([&] {
      return db.Count("SELECT count(*) FROM " + o + ".inbox WHERE status = 'processed'") == 2;
    });
    INFO(d.Log() << db.Query("SELECT id, status, lease_owner, lease_until FROM " + o + ".jobs"));
    REQUIRE(processed);
  }
  CHECK(TablesIn(db, "public") == 0);

  // `inbox clear` and `purge` as the reader, given UPDATE and DELETE as the README says.
  REQUIRE(db.Query("GRANT UPDATE, DELETE ON ALL TABLES IN SCHEMA " + o + " TO " + reader.name())
              .empty());
  CHECK(Run(dir, {"inbox", "clear", "e", "read-2"}, pinned).exit_code == 0);
  CHECK(Run(dir, {"purge"}, pinned).exit_code == 0);
  CHECK(db.Count("SELECT count(*) FROM " + o + ".inbox") == 1);

  // Behind the binary: the read verb says so, and changes nothing.
  REQUIRE(db.Query("DELETE FROM " + owner.name() +
                   ".schema_migrations WHERE version = (SELECT "
                   "max(version) FROM " +
                   owner.name() + ".schema_migrations)")
              .empty());
  const int64_t recorded = db.Count("SELECT count(*) FROM " + owner.name() + ".schema_migrations");
  CliResult behind = Run(dir, {"inbox", "list"}, pinned);
  CHECK(behind.exit_code == 2);
  CHECK(behind.err.find("hookbox migrate") != std::string::npos);
  CHECK(db.Count("SELECT count(*) FROM " + owner.name() + ".schema_migrations") == recorded);
}
