// `hookbox inbox retry --dead [FILTER]` and `hookbox inbox replay [FILTER] --handler NAME`
// (src/cli/bulk.cc): the plan and the act (exit 0), more than one row without --yes and a
// filter that cannot be evaluated (exit 2, README "Bulk retry and replay"), usage errors
// (exit 1), a database that cannot be opened (exit 2), and --help. What the re-armed jobs
// then do is integration/bulk_test.cc's.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Has;
using hookbox::testing::kCannotOpen;
using hookbox::testing::Workspace;

// ---- inbox retry --dead

TEST_CASE("inbox retry --dead: the plan, then the dead jobs re-armed with --yes, exit 0") {
  Workspace w;
  w.SeedDeadRows({"evt-1", "evt-2"});
  CliResult dry = w.Run({"inbox", "retry", "--dead", "--endpoint", "raw", "--dry-run"});
  CHECK(dry.exit_code == 0);
  CHECK(Has(dry.out, "plan: retry dead jobs"));
  CHECK(Has(dry.out, "dry run: nothing changed"));
  CliResult refused = w.Run({"inbox", "retry", "--dead", "--endpoint", "raw"});
  CHECK(refused.exit_code == 2);
  CHECK(Has(refused.err, "2 rows match: add --yes"));
  CliResult done = w.Run({"inbox", "retry", "--dead", "--endpoint", "raw", "--yes", "--json"});
  CHECK(done.exit_code == 0);
  auto out = nlohmann::json::parse(done.out);
  CHECK(out["rearmed"] == 2);
  CliResult nothing = w.Run({"inbox", "retry", "--dead", "--endpoint", "raw"});
  CHECK(nothing.exit_code == 0);
  CHECK(Has(nothing.out, "nothing to do"));
}

TEST_CASE("inbox retry --dead: usage errors are exit 1; a bad filter is exit 2") {
  Workspace w;
  w.Migrate();
  CliResult row = w.Run({"inbox", "retry", "--dead", "raw", "evt-1"});
  CHECK(row.exit_code == 1);
  CHECK(Has(row.err, "hookbox: inbox retry --dead takes a filter (--endpoint ...), not ENDPOINT"));
  CliResult flag = w.Run({"inbox", "retry", "--dead", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult missing = w.RunBare({"inbox", "retry", "--dead", "--status"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "--status: 1 required TEXT missing"));
  CliResult filter = w.Run({"inbox", "retry", "--dead", "--status", "bogus"});
  CHECK(filter.exit_code == 2);
  CHECK(Has(filter.err, "hookbox: bad filter: --status bogus"));
}

TEST_CASE("inbox retry --dead: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"inbox", "retry", "--dead", "--dry-run"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
}

TEST_CASE("inbox retry --dead --help: exit 0, the filter and --yes on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"inbox", "retry", "--dead", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "--rate"));
  CHECK(Has(r.out, "--yes"));
  CHECK(Has(r.out, "--where"));
}

// ---- inbox replay

TEST_CASE("inbox replay: the plan for a configured handler, exit 0") {
  Workspace w;
  w.SeedDeadRows({"evt-1", "evt-2"});
  // Dead jobs are not done: nothing to replay, and the plan says why.
  CliResult dry = w.Run({"inbox", "replay", "--handler", "fails", "--dry-run"});
  CHECK(dry.exit_code == 0);
  CHECK(Has(dry.out, "plan: replay handler fails"));
  CHECK(Has(dry.out, "2 without a done job of the handler"));
  CHECK(Has(dry.out, "dry run: nothing changed"));
  CliResult act = w.Run({"inbox", "replay", "--handler", "fails", "--json"});
  CHECK(act.exit_code == 0);
  auto out = nlohmann::json::parse(act.out);
  CHECK(out["verb"] == "replay");
  CHECK(out["rearmed"] == 0);
  CHECK(out["seconds"] == 0);  // the keys of a run that acted, though nothing was
}

TEST_CASE("inbox replay: usage and lookup errors are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult flag = w.Run({"inbox", "replay", "--handler", "fails", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult missing = w.RunBare({"inbox", "replay", "--handler"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "--handler: 1 required TEXT missing"));
  CliResult handler = w.Run({"inbox", "replay", "--handler", "nope"});
  CHECK(handler.exit_code == 1);
  CHECK(Has(handler.err, "hookbox: no handler nope in the config"));
}

TEST_CASE("inbox replay: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"inbox", "replay", "--handler", "fails", "--dry-run"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
}

TEST_CASE("inbox replay --help: exit 0, what it does on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"inbox", "replay", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "run a handler again"));
  CHECK(Has(r.out, "--handler"));
}
