// The table of verbs (src/main.cc) as the operator meets it: no verb, an unknown one, a verb
// family without its verb, `--help`, and a config file that cannot be read, which every
// verb answers alike (exit 1, naming the file) before it opens anything.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Has;
using hookbox::testing::Workspace;

TEST_CASE("hookbox: no verb is exit 1, asking for one") {
  Workspace w;
  CliResult r = w.RunBare({});
  CHECK(r.exit_code == 1);
  CHECK(Has(r.err, "A subcommand is required"));
  CHECK(r.out.empty());
}

TEST_CASE("hookbox: an unknown verb is exit 1") {
  Workspace w;
  CliResult r = w.RunBare({"frobnicate"});
  CHECK(r.exit_code == 1);
  // CLI11 does not name the word it did not know; it asks for a verb and points at --help.
  CHECK(Has(r.err, "A subcommand is required"));
  CHECK(Has(r.err, "--help"));
}

TEST_CASE("hookbox: inbox and handler without their verb are exit 1") {
  Workspace w;
  for (const char* family : {"inbox", "handler"}) {
    INFO(family);
    CliResult r = w.RunBare({family});
    CHECK(r.exit_code == 1);
    CHECK(Has(r.err, "A subcommand is required"));
  }
}

TEST_CASE("hookbox --help: exit 0, every verb listed on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"--help"});
  CHECK(r.exit_code == 0);
  for (const char* verb :
       {"serve", "check-config", "migrate", "inbox", "handler", "send", "stats", "purge"}) {
    INFO(verb);
    CHECK(Has(r.out, verb));
  }
  CHECK(Has(r.out, "run the daemon"));
  CliResult inbox = w.RunBare({"inbox", "--help"});
  CHECK(inbox.exit_code == 0);
  for (const char* verb : {"list", "show", "clear", "retry", "replay", "reassign", "drop"}) {
    INFO(verb);
    CHECK(Has(inbox.out, verb));
  }
  CliResult handler = w.RunBare({"handler", "--help"});
  CHECK(handler.exit_code == 0);
  for (const char* verb : {"list", "pause", "resume"}) {
    INFO(verb);
    CHECK(Has(handler.out, verb));
  }
}

TEST_CASE("every verb: a config file that cannot be read is exit 1, naming the file") {
  Workspace w;
  const std::string missing = w.dir() / "missing.yaml";
  const std::vector<std::vector<std::string>> verbs = {
      {"serve"},
      {"check-config"},
      {"migrate"},
      {"inbox", "list"},
      {"inbox", "show", "raw", "evt-1"},
      {"inbox", "clear", "raw", "evt-1"},
      {"inbox", "retry", "raw", "evt-1"},
      {"inbox", "retry", "--dead", "--dry-run"},
      {"inbox", "replay", "--handler", "fails", "--dry-run"},
      {"inbox", "reassign", "raw", "old", "fails"},
      {"inbox", "drop", "raw", "old"},
      {"handler", "list"},
      {"handler", "pause", "raw/fails"},
      {"handler", "resume", "raw/fails"},
      {"send", "raw", w.dir() / "body.json"},
      {"stats"},
      {"purge"},
  };
  for (const auto& verb : verbs) {
    INFO(verb[0] << " " << (verb.size() > 1 ? verb[1] : ""));
    CliResult r = w.RunWith(missing, verb);
    CHECK(r.exit_code == 1);
    // check-config's report is its output (stdout); the other verbs say it on stderr.
    const std::string& said = verb[0] == "check-config" ? r.out : r.err;
    CHECK(Has(said, missing + ": error: cannot read"));
  }
  CHECK_FALSE(std::filesystem::exists(w.db()));  // nothing was opened or created
}
