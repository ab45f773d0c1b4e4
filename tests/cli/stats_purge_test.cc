// `hookbox stats` and `hookbox purge` (src/cli/stats_purge.cc): counts by endpoint and status, and
// what retention no longer keeps deleted or counted (exit 0); usage errors (exit 1); a
// database that cannot be opened (exit 2); and --help. Purge's schedule and what it keeps
// are the work and integration tests'.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Has;
using hookbox::testing::kCannotOpen;
using hookbox::testing::Workspace;

// ---- stats

TEST_CASE("stats: counts by endpoint and status, exit 0; --json is an object") {
  Workspace w;
  w.SeedDeadRows({"evt-1", "evt-2"});
  CliResult r = w.Run({"stats"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "ENDPOINT"));
  CHECK(Has(r.out, "dead"));
  CliResult json = w.Run({"stats", "--json"});
  CHECK(json.exit_code == 0);
  CHECK(nlohmann::json::parse(json.out)["raw"]["dead"] == 2);
}

TEST_CASE("stats: usage errors are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult flag = w.Run({"stats", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult extra = w.Run({"stats", "raw"});
  CHECK(extra.exit_code == 1);
  CHECK(Has(extra.err, "The following argument was not expected: raw"));
}

TEST_CASE("stats: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"stats"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
}

TEST_CASE("stats --help: exit 0, what it does on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"stats", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "counts by endpoint and status"));
  CHECK(Has(r.out, "--json"));
}

// ---- purge

TEST_CASE("purge: exit 0, what went by kind; --dry-run --json counts and says so") {
  Workspace w;
  w.SeedDeadRows({"evt-1"});
  CliResult dry = w.Run({"purge", "--dry-run", "--json"});
  CHECK(dry.exit_code == 0);
  auto counts = nlohmann::json::parse(dry.out);
  CHECK(counts["dry_run"] == true);
  CHECK(counts["dead"] == 0);  // dead a moment ago, well inside retention
  CliResult r = w.Run({"purge"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "purged:"));
  CHECK(Has(r.out, "dead"));
  CHECK(Has(w.Run({"inbox", "list"}).out, "evt-1"));
}

TEST_CASE("purge: usage errors are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult flag = w.Run({"purge", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult extra = w.Run({"purge", "now"});
  CHECK(extra.exit_code == 1);
  CHECK(Has(extra.err, "The following argument was not expected: now"));
}

TEST_CASE("purge: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"purge", "--dry-run"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
}

TEST_CASE("purge --help: exit 0, its options on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"purge", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "delete what retention no longer keeps"));
  CHECK(Has(r.out, "--dry-run"));
}
