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

}  // namespace
}  // namespace hookbox
