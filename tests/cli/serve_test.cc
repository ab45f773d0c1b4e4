// `hookbox serve` (src/cli/serve.cc) as a verb: started by the harness and stopped with
// SIGTERM (exit 0), a usage error, a database it cannot open or create, and --help. What the
// daemon does once it listens is the integration tests'.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::Has;
using hookbox::testing::kCannotOpen;
using hookbox::testing::kCliConfig;
using hookbox::testing::Workspace;

TEST_CASE("serve: listens, creates the inbox, and exits 0 on SIGTERM") {
  Workspace w;
  Daemon d(w.dir(), kCliConfig);  // returns once its "listening" line is logged
  CHECK(d.port() > 0);
  CHECK(std::filesystem::exists(w.db()));
  CHECK(d.Kill(SIGTERM) == 0);
  CHECK(Has(d.Log(), "\"msg\":\"listening\""));
}

TEST_CASE("serve: usage errors are exit 1 and create nothing") {
  Workspace w;
  CliResult flag = w.Run({"serve", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  CliResult missing = w.RunBare({"serve", "-c"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "--config: 1 required TEXT missing"));
  CHECK_FALSE(std::filesystem::exists(w.db()));
}

TEST_CASE("serve: a database that cannot be opened is exit 2, naming it") {
  Workspace w;
  CliResult r = w.RunBadDb({"serve"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, kCannotOpen + (w.dir() / "no-such-dir/inbox.db")));
}

TEST_CASE("serve: a handler kind's mistake is exit 1, at its line, beside the other errors") {
  Workspace w;
  const std::string bad = w.WriteConfig("kinds.yaml", R"(
database: {DB}
endpoints:
  - name: a
    path: a-without-slash
    verify: none
    routes:
      - events: ["*"]
        handlers:
          - file: {dir: /tmp, mode: "0600"}
)");
  CliResult r = w.RunWith(bad, {"serve"});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(Has(r.err, bad + ":5:5: error: endpoints[0].path: "));
  CHECK(Has(r.err, bad + ":10:31: error: endpoints[0].routes[0].handlers[0].file: unknown key "
                         "\"mode\""));
  CHECK_FALSE(std::filesystem::exists(w.db()));
}

TEST_CASE("serve --help: exit 0, what it does on stdout") {
  Workspace w;
  CliResult r = w.RunBare({"serve", "--help"});
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "run the daemon"));
  CHECK(Has(r.out, "--config"));
}
