// `hookbox inbox reassign ENDPOINT FROM TO` and `hookbox inbox drop ENDPOINT HANDLER`
// (src/cli/reassign.cc): the jobs of a handler the config no longer has, given to another or
// deleted (exit 0); usage and lookup errors (exit 1), among them a handler the config still
// has; a database that cannot be opened (exit 2); and --help. The rows' jobs are the dead
// ones of handler `fails`, after the config renamed it `fixed`.
#include <catch2/catch.hpp>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Has;
using hookbox::testing::kCannotOpen;
using hookbox::testing::kCliConfig;
using hookbox::testing::Workspace;

namespace {

// The config with its handler renamed from `fails` to `fixed`; returns its path.
std::string Renamed(const Workspace& w) {
  std::string text = kCliConfig;
  text.replace(text.find("name: fails"), 11, "name: fixed");
  return w.WriteConfig("renamed.yaml", text);
}

}  // namespace

// ---- inbox reassign

TEST_CASE("inbox reassign: the jobs of a gone handler move to a configured one, exit 0") {
  Workspace w;
  w.SeedDeadRows({"evt-1", "evt-2"});
  CliResult r = w.RunWith(Renamed(w), {"inbox", "reassign", "raw", "fails", "fixed"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "moved 2 job(s) of raw from fails to fixed"));
}

TEST_CASE("inbox reassign: usage and lookup errors are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult missing = w.Run({"inbox", "reassign", "raw", "old"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "TO is required"));
  CliResult flag = w.Run({"inbox", "reassign", "raw", "old", "fails", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult to = w.Run({"inbox", "reassign", "raw", "old", "nope"});
  CHECK(to.exit_code == 1);
  CHECK(Has(to.err, "hookbox: endpoint raw has no handler named nope"));
  CliResult endpoint = w.Run({"inbox", "reassign", "raw2", "old", "fails"});
  CHECK(endpoint.exit_code == 1);
  CHECK(Has(endpoint.err, "hookbox: unknown endpoint \"raw2\""));
}

TEST_CASE("inbox reassign: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"inbox", "reassign", "raw", "old", "fails"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
}

TEST_CASE("inbox reassign --help: exit 0, its arguments on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"inbox", "reassign", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "give the jobs of a handler the config no longer has to another"));
  CHECK(Has(r.out, "FROM"));
  CHECK(Has(r.out, "TO"));
}

// ---- inbox drop

TEST_CASE("inbox drop: the waiting jobs of a gone handler are deleted, exit 0") {
  Workspace w;
  w.SeedDeadRows({"evt-1", "evt-2"});
  CliResult r = w.RunWith(Renamed(w), {"inbox", "drop", "raw", "fails"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "dropped 2 job(s) of handler fails from raw"));
}

TEST_CASE("inbox drop: usage errors, and a handler the config has, are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult missing = w.Run({"inbox", "drop", "raw"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "HANDLER is required"));
  CliResult flag = w.Run({"inbox", "drop", "raw", "old", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult configured = w.Run({"inbox", "drop", "raw", "fails"});
  CHECK(configured.exit_code == 1);
  CHECK(Has(configured.err, "hookbox: handler fails is configured for endpoint raw"));
}

TEST_CASE("inbox drop: a database that cannot be opened is exit 2") {
  Workspace w;
  CliResult r = w.RunBadDb({"inbox", "drop", "raw", "old"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen));
}

TEST_CASE("inbox drop --help: exit 0, its arguments on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"inbox", "drop", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "delete the waiting jobs of a handler the config no longer has"));
  CHECK(Has(r.out, "HANDLER"));
}
