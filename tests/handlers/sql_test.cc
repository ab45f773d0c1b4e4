// Tests for handlers/sql: validation at load and the SqlWork it hands the inbox.
#include "handlers/sql/sql.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/handlers/testing.h"

namespace hookbox {
namespace {

using testing::Build;
using testing::Event;

TEST_CASE("sql: a valid config gives its setup and statements to the inbox") {
  auto built = Build("sql", R"yaml({
    setup: ["CREATE TABLE IF NOT EXISTS paid (id TEXT PRIMARY KEY, amount INT, at TEXT)"],
    statements: [
      "INSERT INTO paid VALUES (:event_id, json_extract(:body, '$.amount'), :received_at)",
      "UPDATE paid SET at = ':not_a_param' -- :nor_this\n WHERE id = :event_id /* :x */",
      "SELECT :endpoint, :type, :resource, :sequence, CAST(:body AS TEXT), '10:30', x::text;"
    ]})yaml");
  INFO(built.Errors());
  REQUIRE(built.handler != nullptr);
  const auto* work = dynamic_cast<const SqlWork*>(built.handler->transactional());
  REQUIRE(work != nullptr);
  CHECK(work->setup.size() == 1);
  REQUIRE(work->statements.size() == 3);
  CHECK(work->statements[0].starts_with("INSERT INTO paid"));
  CHECK(built.handler->timeout() == std::chrono::seconds(30));
  HandlerResult r = built.handler->Run(Event());
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.detail == "sql runs in the inbox transaction");

  auto no_setup = Build("sql", "{statements: [\"DELETE FROM t WHERE id = :event_id\"]}");
  REQUIRE(no_setup.handler != nullptr);
  const auto* no_setup_work = dynamic_cast<const SqlWork*>(no_setup.handler->transactional());
  REQUIRE(no_setup_work != nullptr);
  CHECK(no_setup_work->setup.empty());
  CHECK(no_setup_work->kind() == "sql");
}

// The statements as the inbox is handed them: what a backend's WorkSetup and WorkTransaction
// were asked, in order. (The inbox's own suite runs them on SQLite and PostgreSQL:
// tests/inbox/claim_finish_test.cc, sync_test.cc.)
struct Recorder final : WorkSetup, WorkTransaction {
  std::vector<std::string> calls;
  std::map<std::string, std::string> bound;  // the last statement's named parameters
  std::string fail_on;                       // a statement Execute refuses

  Status Execute(const std::string& statement) override {
    calls.push_back("setup " + statement);
    return Status::Ok();
  }
  Status Check(const std::string& statement) override {
    calls.push_back("check " + statement);
    return Status::Ok();
  }
  Status Execute(const std::string& statement, const StatementParams& params) override {
    calls.push_back("run " + statement);
    bound.clear();
    for (const char* name : {":event_id", ":generation", ":traceparent", ":nope"}) {
      const std::optional<StatementValue> v = params(name);
      if (!v) continue;
      bound[name] = v->text ? *v->text : "#" + std::to_string(v->number);
    }
    if (statement == fail_on) return Status::Internal("no such table: t");
    return Status::Ok();
  }
};

TEST_CASE("sql: its work sets up, checks and runs its statements with the event's values") {
  auto built = Build("sql", R"yaml({
    setup: ["CREATE TABLE IF NOT EXISTS t (id TEXT)"],
    statements: ["INSERT INTO t VALUES (:event_id)", "UPDATE t SET id = id"]})yaml");
  INFO(built.Errors());
  REQUIRE(built.handler != nullptr);
  const TransactionalWork* work = built.handler->transactional();
  REQUIRE(work != nullptr);

  Recorder db;
  REQUIRE(work->Setup(db).ok());
  CHECK(db.calls == std::vector<std::string>{"setup CREATE TABLE IF NOT EXISTS t (id TEXT)",
                                             "check INSERT INTO t VALUES (:event_id)",
                                             "check UPDATE t SET id = id"});

  HandlerEvent e = Event();
  e.event_id = "evt_1";
  e.generation = 2;
  e.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  db.calls.clear();
  REQUIRE(work->Run(db, e).ok());
  CHECK(db.calls == std::vector<std::string>{"run INSERT INTO t VALUES (:event_id)",
                                             "run UPDATE t SET id = id"});
  // Text by reference to the event, :generation as a number, an unknown name unbound.
  CHECK(db.bound == std::map<std::string, std::string>{{":event_id", "evt_1"},
                                                       {":generation", "#2"},
                                                       {":traceparent", e.traceparent}});

  // The first statement that fails ends the run with its error.
  db.calls.clear();
  db.fail_on = "INSERT INTO t VALUES (:event_id)";
  const Status failed = work->Run(db, e);
  CHECK(failed.ToString().find("no such table: t") != std::string::npos);
  CHECK(db.calls == std::vector<std::string>{"run INSERT INTO t VALUES (:event_id)"});
}

TEST_CASE("sql: the factory reports every problem") {
  auto built = Build("sql", R"yaml({
    setup: ["CREATE TABLE t (x DEFAULT :event_id)", ""],
    statements: [
      "INSERT INTO t VALUES (:event_id, :amount, :amount, :Body)",
      "INSERT INTO t VALUES (1); DELETE FROM t",
      "SELECT 'unterminated",
      [nested],
      "   "
    ],
    engine: sqlite})yaml");
  CHECK(built.handler == nullptr);
  INFO(built.Errors());
  CHECK(built.HasError("h.setup[0]: parameter :event_id in setup"));
  CHECK(built.HasError("h.setup[1]: expected an SQL statement"));
  CHECK(built.HasError("h.statements[0]: unknown parameter :amount (known: :event_id, "));
  CHECK(built.HasError("h.statements[0]: unknown parameter :Body"));
  CHECK(built.HasError("h.statements[1]: holds more than one statement"));
  CHECK(built.HasError("h.statements[2]: a quote is never closed"));
  CHECK(built.HasError("h.statements[3]: expected an SQL statement"));
  CHECK(built.HasError("h.statements[4]: expected an SQL statement"));
  CHECK(built.HasError("h: unknown key \"engine\""));
  CHECK(built.errors.size() == 9);  // :amount once

  CHECK(Build("sql", "{statements: []}").HasError("h.statements: expected a non-empty list"));
  CHECK(Build("sql", "{setup: []}").HasError("h: statements is required"));
  CHECK(Build("sql", "{statements: \"SELECT 1\"}").HasError("h.statements: expected a non-empty"));
  CHECK(Build("sql", "{setup: x, statements: [SELECT 1]}").HasError("h.setup: expected a list"));
}

TEST_CASE("sql: transaction control is refused at load, in setup and statements") {
  // Each would end hookbox's own transaction partway: a sync endpoint's COMMIT would commit
  // the accepts grouped with it before the handler's other statements and its row's settling.
  auto built = Build("sql", R"yaml({
    setup: ["BEGIN"],
    statements: [
      "INSERT INTO t VALUES (:event_id)",
      "commit",
      " -- a comment first\n END",
      "/* x */ Savepoint s",
      "RELEASE s",
      "ROLLBACK TO s",
      "START TRANSACTION",
      "abort"
    ]})yaml");
  CHECK(built.handler == nullptr);
  INFO(built.Errors());
  CHECK(built.HasError("h.setup[0]: BEGIN is transaction control"));
  CHECK(built.HasError("h.statements[1]: commit is transaction control"));
  CHECK(built.HasError("h.statements[2]: END is transaction control"));
  CHECK(built.HasError("h.statements[3]: Savepoint is transaction control"));
  CHECK(built.HasError("h.statements[4]: RELEASE is transaction control"));
  CHECK(built.HasError("h.statements[5]: ROLLBACK is transaction control"));
  CHECK(built.HasError("h.statements[6]: START is transaction control"));
  CHECK(built.HasError("h.statements[7]: abort is transaction control"));
  CHECK(built.errors.size() == 8);

  // The words inside a statement, or as part of a longer name, are not.
  auto fine = Build("sql", R"yaml({
    statements: [
      "INSERT INTO release_log VALUES (:event_id, 'COMMIT')",
      "SELECT 1 AS begin",
      "UPDATE t SET note = 'END' WHERE id = :event_id"
    ]})yaml");
  INFO(fine.Errors());
  CHECK(fine.handler != nullptr);
}

}  // namespace
}  // namespace hookbox
