// `hookbox alerts test NAME` (src/cli/alert_sample.cc): one sample alert to the named
// alert's target, now, and what the target answered. Its exec target runs for real here:
// a target that takes the alert is exit 0 and gets the sample on stdin; one that fails is
// exit 1 with its outcome; a name no alert has is exit 1, listing the config's alerts; and
// nothing of it reaches the inbox.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/cli/cli.h"

using hookbox::testing::CliResult;
using hookbox::testing::Has;
using hookbox::testing::kCliConfig;
using hookbox::testing::Workspace;

namespace {

// kCliConfig with two alerts: `ops` writes what it is given to `out`, `broken` fails.
std::string WithAlerts(const Workspace& w, const std::string& out) {
  const std::string alerts = R"(alerts:
  - name: ops
    on: [job_dead]
    exec: {command: [/bin/sh, -c, 'cat > {OUT}'], timeout: 5s}
  - name: broken
    on: [job_dead]
    exec: {command: [/bin/sh, -c, 'exit 3'], timeout: 5s}
)";
  std::string text = kCliConfig + alerts;
  text.replace(text.find("{OUT}"), 5, out);
  return w.WriteConfig("alerts.yaml", text);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("alerts test: the target gets a sample alert now, exit 0") {
  Workspace w;
  const std::string out = w.dir() / "alert.json";
  const std::string config = WithAlerts(w, out);
  CliResult r = w.RunWith(config, {"alerts", "test", "ops"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(Has(r.out, "alert ops: sent "));
  const std::string sent = ReadAll(out);
  CHECK(Has(sent, "\"alert\":\"test\""));
  CHECK(Has(sent, "\"name\":\"ops\""));
  CHECK(Has(sent, "\"conditions\":[\"job_dead\"]"));
  // Nothing is stored: the database was never created.
  CHECK_FALSE(std::filesystem::exists(w.db()));
}

TEST_CASE("alerts test: a target that fails is exit 1, with its outcome") {
  Workspace w;
  CliResult r = w.RunWith(WithAlerts(w, w.dir() / "unused.json"), {"alerts", "test", "broken"});
  CHECK(r.exit_code == 1);
  CHECK(Has(r.out, "alert broken: not sent: failed"));
}

TEST_CASE("alerts test: a name no alert has is exit 1, naming the alerts there are") {
  Workspace w;
  const std::string config = WithAlerts(w, w.dir() / "unused.json");
  CliResult r = w.RunWith(config, {"alerts", "test", "pager"});
  CHECK(r.exit_code == 1);
  CHECK(Has(r.err, "hookbox: no alert named \"pager\" in " + config + " (its alerts: ops broken)"));
  CliResult none = w.Run({"alerts", "test", "ops"});
  CHECK(none.exit_code == 1);
  CHECK(Has(none.err, "hookbox: no alert named \"ops\" in "));
  CHECK_FALSE(Has(none.err, "its alerts"));
  CliResult missing = w.Run({"alerts", "test"});
  CHECK(missing.exit_code == 1);
  CHECK(Has(missing.err, "NAME is required"));
}
