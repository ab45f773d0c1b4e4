// Tests for handlers/sql: validation at load and the SqlWork it hands the inbox.
#include <catch2/catch.hpp>

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
  const SqlWork* work = built.handler->sql();
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
  CHECK(no_setup.handler->sql()->setup.empty());
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
