// `hookbox check-config` and `hookbox migrate` (src/cli/check_config.cc): their exit codes and what
// they print on success, on a usage error, on a database that cannot be opened, and for
// --help. check-config checks the config, not the database (its check of held jobs is
// skipped when the inbox cannot be opened: integration/handler_identity_test.cc).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Has;
using hookbox::testing::kCannotOpen;
using hookbox::testing::Workspace;

TEST_CASE("check-config: a good config is exit 0, saying ok on stdout") {
  Workspace w;
  CliResult r = w.Run({"check-config"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, w.config() + ": ok (1 endpoint(s))"));
  CHECK(r.err.empty());
  CliResult shape = w.Run({"check-config", "--no-secrets"});
  CHECK(shape.exit_code == 0);
  CHECK(Has(shape.out, ": ok (1 endpoint(s))"));
}

TEST_CASE("check-config: a config with an error is exit 1, naming the file and the error") {
  Workspace w;
  const std::string bad = w.WriteConfig("no-path.yaml", R"(
database: {DB}
endpoints:
  - name: raw
    verify: none
)");
  // check-config's report, errors included, is its output: stdout.
  CliResult r = w.RunWith(bad, {"check-config"});
  CHECK(r.exit_code == 1);
  CHECK(Has(r.out, bad + ":4:5: error: endpoints[0]: path is required"));
  CHECK(Has(r.out, "1 error(s)"));
  CHECK_FALSE(Has(r.out, ": ok"));
}

TEST_CASE("check-config: a handler kind's mistakes come with every other, each at its line") {
  Workspace w;
  // A bad provider in one endpoint; in another, an exec handler whose program is not there and
  // whose timeout is not a duration, and an http handler whose signing key cannot be read.
  const std::string bad = w.WriteConfig("kinds.yaml", R"(
database: {DB}
endpoints:
  - name: a
    path: /a
    provider: stripey
    secrets: [{env: HOOKBOX_TEST_UNSET_SECRET}]
  - name: b
    path: /b
    verify: none
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/nonexistent/hookbox/prog], timeout: soon}
          - http: {url: "http://127.0.0.1:1/x", sign: {secret: {env: HOOKBOX_TEST_UNSET_SIGN}}}
)");
  const std::string h = "endpoints[1].routes[0].handlers";
  CliResult r = w.RunWith(bad, {"check-config"});
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK(Has(r.out, bad + ":6:5: error: endpoints[0].provider: \"stripey\" is not one of"));
  CHECK(Has(r.out, bad + ":7:15: error: endpoints[0].secrets[0]: environment variable"));
  CHECK(Has(r.out, bad + ":14:30: error: " + h +
                       "[0].exec.command[0]: \"/nonexistent/hookbox/prog\" is not an executable "
                       "file"));
  CHECK(Has(r.out, bad + ":14:58: error: " + h + "[0].exec.timeout: \"soon\" is not a duration"));
  CHECK(Has(r.out, bad + ":15:56: error: " + h +
                       "[1].http.sign.secret: environment variable HOOKBOX_TEST_UNSET_SIGN is not "
                       "set"));
  CHECK(Has(r.out, "5 error(s)"));
  // --no-secrets reads no secret, the http handler's signing key included; the rest is the same.
  CliResult shape = w.RunWith(bad, {"check-config", "--no-secrets"});
  INFO(shape.out);
  CHECK(shape.exit_code == 1);
  CHECK_FALSE(Has(shape.out, "HOOKBOX_TEST_UNSET"));
  CHECK(Has(shape.out, "[0].exec.command[0]: \"/nonexistent/hookbox/prog\" is not an executable"));
  CHECK(Has(shape.out, "3 error(s)"));
}

TEST_CASE("check-config: usage errors are exit 1") {
  Workspace w;
  CliResult flag = w.Run({"check-config", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult missing = w.RunBare({"check-config", "-c"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "--config: 1 required TEXT missing"));
}

TEST_CASE("check-config: a database that cannot be opened is still exit 0, creating nothing") {
  Workspace w;
  CliResult r = w.RunBadDb({"check-config"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, ": ok (1 endpoint(s))"));
  CHECK_FALSE(std::filesystem::exists(w.dir() / "no-such-dir"));
}

TEST_CASE("check-config --help: exit 0, its options on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"check-config", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "report every problem of the config file"));
  CHECK(Has(r.out, "--no-secrets"));
}

TEST_CASE("migrate: creates the inbox (exit 0, each migration named), then finds it up to date") {
  Workspace w;
  CliResult first = w.Run({"migrate"});
  CHECK(first.exit_code == 0);
  CHECK(Has(first.out, "applied 0001_inbox"));
  CHECK(std::filesystem::exists(w.db()));
  CliResult again = w.Run({"migrate"});
  CHECK(again.exit_code == 0);
  CHECK(Has(again.out, "schema is up to date"));
}

TEST_CASE("migrate: usage errors are exit 1 and create nothing") {
  Workspace w;
  CliResult flag = w.Run({"migrate", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult extra = w.Run({"migrate", "extra"});
  CHECK(extra.exit_code == 1);
  CHECK(Has(extra.err, "The following argument was not expected: extra"));
  CHECK_FALSE(std::filesystem::exists(w.db()));
}

TEST_CASE("migrate: a database that cannot be opened is exit 2, naming it") {
  Workspace w;
  CliResult r = w.RunBadDb({"migrate"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen + (w.dir() / "no-such-dir/inbox.db")));
  CHECK(r.out.empty());
}

TEST_CASE("migrate --help: exit 0, what it does on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"migrate", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "create or update the inbox schema"));
  CHECK(Has(r.out, "--config"));
}
