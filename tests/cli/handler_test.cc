// `hookbox handler list | pause | resume` (src/cli/handler.cc): each handler's state, a pause
// with its reason and the resume (exit 0); usage and lookup errors (exit 1); a database that
// cannot be opened (exit 2); and --help. What a paused handler's jobs do is
// integration/handler_state_test.cc's.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Has;
using hookbox::testing::kCannotOpen;
using hookbox::testing::Workspace;

TEST_CASE("handler list, pause, resume: each exit 0, the state as list shows it") {
  Workspace w;
  w.Migrate();
  CliResult list = w.Run({"handler", "list"});
  CHECK(list.exit_code == 0);
  CHECK(Has(list.out, "ENDPOINT/HANDLER"));
  CHECK(Has(list.out, "raw/fails"));
  CHECK(Has(list.out, "running"));

  CliResult pause = w.Run({"handler", "pause", "raw/fails", "--reason", "downstream upgrade"});
  CHECK(pause.exit_code == 0);
  CHECK(Has(pause.out, "paused raw/fails"));
  CliResult json = w.Run({"handler", "list", "--json"});
  CHECK(json.exit_code == 0);
  auto handlers = nlohmann::json::parse(json.out);
  REQUIRE(handlers.size() == 1);
  CHECK(handlers[0]["handler"] == "fails");
  CHECK(handlers[0]["paused"] == true);
  CHECK(handlers[0]["reason"] == "downstream upgrade");

  CliResult resume = w.Run({"handler", "resume", "--endpoint", "raw"});
  CHECK(resume.exit_code == 0);
  CHECK(Has(resume.out, "resumed raw/fails"));
  CHECK(Has(w.Run({"handler", "list"}).out, "running"));
}

TEST_CASE("handler list: a handler's settings are read, what they name is left alone") {
  // The operator's shell is not the daemon's: `handler list` reads each kind's settings (the
  // concurrency it shows) but neither creates a file handler's folder nor looks for anything
  // there; check-config, as serve, does.
  Workspace w;
  const std::string folder = w.dir() / "events";
  const std::string config = w.WriteConfig("file.yaml", R"(
database: {DB}
endpoints:
  - name: raw
    path: /hooks/raw
    verify: none
    routes:
      - events: ["*"]
        handlers:
          - {name: keep, file: {dir: )" + folder + R"(, concurrency: 3}}
)");
  CliResult migrate = w.RunWith(config, {"migrate"});
  INFO(migrate.err);
  REQUIRE(migrate.exit_code == 0);
  CliResult list = w.RunWith(config, {"handler", "list", "--json"});
  INFO(list.err);
  REQUIRE(list.exit_code == 0);
  auto handlers = nlohmann::json::parse(list.out);
  REQUIRE(handlers.size() == 1);
  CHECK(handlers[0]["concurrency"] == 3);
  CHECK_FALSE(std::filesystem::exists(folder));
  CliResult check = w.RunWith(config, {"check-config"});
  CHECK(check.exit_code == 0);
  CHECK(std::filesystem::is_directory(folder));
}

TEST_CASE("handler list, pause, resume: usage and lookup errors are exit 1") {
  Workspace w;
  w.Migrate();
  CliResult flag = w.Run({"handler", "list", "--bogus"});
  CHECK(flag.exit_code == 1);
  CHECK(Has(flag.err, "The following argument was not expected: --bogus"));
  for (const char* verb : {"pause", "resume"}) {
    INFO(verb);
    CliResult none = w.Run({"handler", verb});
    CHECK(none.exit_code == 1);
    CHECK(Has(none.err, "hookbox: name one ENDPOINT/HANDLER, or --endpoint E"));
    CliResult missing = w.RunBare({"handler", verb, "--endpoint"});
    CHECK(missing.exit_code == 1);
    CHECK(Has(missing.err, "--endpoint: 1 required TEXT missing"));
    CliResult unknown = w.Run({"handler", verb, "raw/nope"});
    CHECK(unknown.exit_code == 1);
    CHECK(Has(unknown.err, "hookbox: endpoint raw has no handler named nope"));
  }
}

TEST_CASE("handler list, pause, resume: a database that cannot be opened is exit 2") {
  Workspace w;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"handler", "list"},
                                               {"handler", "pause", "raw/fails"},
                                               {"handler", "resume", "raw/fails"}}) {
    INFO(args[1]);
    CliResult r = w.RunBadDb(args);
    CHECK(r.exit_code == 2);
    CHECK(Has(r.err, kCannotOpen));
  }
}

TEST_CASE("handler list, pause, resume --help: exit 0, what each does on stdout") {
  Workspace w;
  CliResult list = w.RunBare({"handler", "list", "--help"});
  CHECK(list.exit_code == 0);
  CHECK(Has(list.out, "running, paused or circuit-open"));
  CliResult pause = w.RunBare({"handler", "pause", "--help"});
  CHECK(pause.exit_code == 0);
  CHECK(Has(pause.out, "--reason"));
  CliResult resume = w.RunBare({"handler", "resume", "--help"});
  CHECK(resume.exit_code == 0);
  CHECK(Has(resume.out, "let a paused handler's jobs run again"));
}
