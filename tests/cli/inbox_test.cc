// `hookbox inbox list | show | clear | retry ENDPOINT EVENT_ID` (src/cli/inbox.cc): each
// verb's exit code and output on success, on a usage error, on a row or endpoint that is not
// there, on a database that cannot be opened, and for --help. The rows are put there by the
// real daemon (Workspace::SeedDeadRows); `inbox clear` of a running job (exit 3) is
// integration/lifecycle_test.cc's, since it needs an attempt running.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Has;
using hookbox::testing::kCannotOpen;
using hookbox::testing::Workspace;

// ---- inbox list

TEST_CASE("inbox list: the rows, newest first, exit 0; --json is an array") {
  Workspace w;
  w.SeedDeadRows({"evt-1", "evt-2"});
  CliResult r = w.Run({"inbox", "list"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "EVENT ID"));
  REQUIRE(Has(r.out, "evt-1"));
  REQUIRE(Has(r.out, "evt-2"));
  CHECK(r.out.find("evt-2") < r.out.find("evt-1"));
  CHECK(Has(r.out, "dead"));
  CliResult json = w.Run({"inbox", "list", "--json", "--limit", "1"});
  CHECK(json.exit_code == 0);
  auto rows = nlohmann::json::parse(json.out);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["event_id"] == "evt-2");
}

TEST_CASE("inbox list: usage errors are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult flag = w.Run({"inbox", "list", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult missing = w.RunBare({"inbox", "list", "--limit"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "--limit: 1 required INT:INT in [1 - 1000000] missing"));
  CliResult range = w.Run({"inbox", "list", "--limit", "0"});
  CHECK(range.exit_code == 1);
  CHECK(Has(range.err, "--limit: Value 0 not in range 1 to 1000000"));
  CliResult endpoint = w.Run({"inbox", "list", "--endpoint", "nope"});
  CHECK(endpoint.exit_code == 1);
  CHECK(Has(endpoint.err, "hookbox: unknown endpoint \"nope\""));
}

TEST_CASE("inbox list: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"inbox", "list"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
  CHECK(r.out.empty());
}

TEST_CASE("inbox list --help: exit 0, its options on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"inbox", "list", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "list rows, newest first"));
  CHECK(Has(r.out, "--limit"));
  CHECK(Has(r.out, "--where"));
}

// ---- inbox show

TEST_CASE("inbox show: one row with its jobs, exit 0; --json is an object") {
  Workspace w;
  w.SeedDeadRows({"evt-1"});
  CliResult r = w.Run({"inbox", "show", "raw", "evt-1"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "event_id           evt-1"));
  CHECK(Has(r.out, "fails"));
  CliResult json = w.Run({"inbox", "show", "raw", "evt-1", "--json"});
  CHECK(json.exit_code == 0);
  auto row = nlohmann::json::parse(json.out);
  CHECK(row["event_id"] == "evt-1");
  CHECK(row["status"] == "dead");
  REQUIRE(row["jobs"].size() == 1);
  CHECK(row["jobs"][0]["handler"] == "fails");
}

TEST_CASE("inbox show: usage and lookup errors are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult missing = w.Run({"inbox", "show", "raw"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "EVENT_ID is required"));
  CliResult both = w.Run({"inbox", "show", "raw", "evt-1", "--json", "--raw-body"});
  CHECK(both.exit_code == 1);
  CHECK(Has(both.err, "--json excludes --raw-body"));
  CliResult flag = w.Run({"inbox", "show", "raw", "evt-1", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult row = w.Run({"inbox", "show", "raw", "nope"});
  CHECK(row.exit_code == 1);
  CHECK(Has(row.err, "hookbox: no such event: raw nope"));
  CliResult endpoint = w.Run({"inbox", "show", "raw2", "evt-1"});
  CHECK(endpoint.exit_code == 1);
  CHECK(Has(endpoint.err, "hookbox: unknown endpoint \"raw2\""));
}

TEST_CASE("inbox show: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"inbox", "show", "raw", "evt-1"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
}

TEST_CASE("inbox show --help: exit 0, its arguments on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"inbox", "show", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "one row with its jobs and attempts"));
  CHECK(Has(r.out, "EVENT_ID"));
  CHECK(Has(r.out, "--raw-body"));
}

// ---- inbox clear

TEST_CASE("inbox clear: forgets the row, exit 0; then it is not there") {
  Workspace w;
  w.SeedDeadRows({"evt-1"});
  CliResult r = w.Run({"inbox", "clear", "raw", "evt-1"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "cleared raw evt-1"));
  CliResult again = w.Run({"inbox", "clear", "raw", "evt-1"});
  CHECK(again.exit_code == 1);
  CHECK(Has(again.err, "hookbox: no such event: raw evt-1"));
}

TEST_CASE("inbox clear: usage errors are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult missing = w.Run({"inbox", "clear", "raw"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "EVENT_ID is required"));
  CliResult flag = w.Run({"inbox", "clear", "raw", "evt-1", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
}

TEST_CASE("inbox clear: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"inbox", "clear", "raw", "evt-1"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
}

TEST_CASE("inbox clear --help: exit 0, what it does on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"inbox", "clear", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "forget a row"));
  CHECK(Has(r.out, "EVENT_ID"));
}

// ---- inbox retry ENDPOINT EVENT_ID

TEST_CASE("inbox retry: re-arms a dead row's job, exit 0; a row with none left is exit 1") {
  Workspace w;
  w.SeedDeadRows({"evt-1"});
  CliResult r = w.Run({"inbox", "retry", "raw", "evt-1"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "re-armed 1 dead job(s) of raw evt-1"));
  CliResult again = w.Run({"inbox", "retry", "raw", "evt-1"});
  CHECK(again.exit_code == 1);
  CHECK(Has(again.err, "hookbox: no dead job to retry: raw evt-1"));
}

TEST_CASE("inbox retry: usage and lookup errors are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult none = w.Run({"inbox", "retry"});
  CHECK(none.exit_code == 1);
  CHECK(Has(none.err, "hookbox: inbox retry takes ENDPOINT EVENT_ID (one row), or --dead"));
  CliResult half = w.Run({"inbox", "retry", "raw"});
  CHECK(half.exit_code == 1);
  CHECK(Has(half.err, "hookbox: inbox retry takes ENDPOINT EVENT_ID"));
  CliResult mixed = w.Run({"inbox", "retry", "raw", "evt-1", "--dry-run"});
  CHECK(mixed.exit_code == 1);
  CHECK(Has(mixed.err, "hookbox: inbox retry takes ENDPOINT EVENT_ID"));
  CliResult flag = w.Run({"inbox", "retry", "raw", "evt-1", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult row = w.Run({"inbox", "retry", "raw", "nope"});
  CHECK(row.exit_code == 1);
  CHECK(Has(row.err, "hookbox: no such event: raw nope"));
}

TEST_CASE("inbox retry: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"inbox", "retry", "raw", "evt-1"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
}

TEST_CASE("inbox retry --help: exit 0, both forms on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"inbox", "retry", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "re-arm the dead jobs of a row"));
  CHECK(Has(r.out, "--dead"));
}
