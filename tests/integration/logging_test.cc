// The daemon's log as an operator meets it (README, "Logs"): `log_level:` and its reload,
// the journal's priority prefixes when stderr is the journal's stream, and a dead job as an
// `error`. The real daemon, its real stderr file.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/integration/daemon.h"

using namespace hookbox::testing;
using json = nlohmann::json;

namespace {

// One endpoint whose only handler fails, and whose jobs die at that first failure.
std::string Config(const std::string& level) {
  return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 1
log_level: )" +
         level + R"(
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    retry: {max_attempts: 1}
    routes:
      - events: ["*"]
        handlers:
          - {name: fails, exec: {command: [/bin/false]}}
)";
}

// The daemon's log lines as they were written, prefix and all.
std::vector<std::string> RawLines(const Daemon& d) {
  std::vector<std::string> lines;
  std::istringstream in(d.Log());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines with this "msg".
std::vector<json> Lines(const Daemon& d, const std::string& msg) {
  std::vector<json> found;
  for (const auto& line : RawLines(d)) {
    json j = ParseLogLine(line);
    if (j.is_object() && j.value("msg", "") == msg) found.push_back(j);
  }
  return found;
}

bool Delivered(const Daemon& d, const std::string& id) {
  auto r = d.Post("/hooks/open", {}, R"({"id":")" + id + R"("})");
  return r && r->status == 200;
}

}  // namespace

TEST_CASE("log_level: warn keeps info lines out, a reload to info lets them in") {
  TempDir dir;
  Daemon d(dir, Config("warn"));
  // The lifecycle lines are written whatever the level: the start can always be seen.
  REQUIRE(d.LogCount("listening") == 1);
  REQUIRE(Delivered(d, "evt_1"));
  // The job runs and dies: its attempt line is an error, which warn lets through.
  REQUIRE(d.WaitForLog("attempt"));
  const auto attempts = Lines(d, "attempt");
  REQUIRE(attempts.size() == 1);
  CHECK(attempts[0]["level"] == "error");
  CHECK(attempts[0]["next"] == "dead");
  CHECK(d.LogCount("delivery") == 0);  // an accepted delivery's line is info

  const int reloads = d.LogCount("reloaded");
  d.WriteConfig(Config("info"));
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] { return d.LogCount("reloaded") > reloads; }));
  REQUIRE(Delivered(d, "evt_2"));
  REQUIRE(d.WaitForLog("delivery"));
  CHECK(Lines(d, "delivery")[0]["event_id"] == "evt_2");
}

TEST_CASE("a bad log_level is a config error, and a reload with one keeps the old level") {
  TempDir dir;
  Daemon d(dir, Config("info"));
  {
    const std::string bad = dir.path().string() + "/bad.yaml";
    std::string text = Config("verbose");
    text.replace(text.find("{DB}"), 4, dir.path().string() + "/bad.db");
    WriteFile(bad, text);
    CliResult r = RunHookbox({"check-config", "-c", bad}, dir.path().string());
    CHECK(r.exit_code == 1);
    CHECK(r.out.find(bad + ":6:1: error: log_level: \"verbose\" is not one of debug, info, warn, "
                           "error") != std::string::npos);
  }
  const int refused = d.LogCount("reload refused: the config has errors; the old one stays");
  d.WriteConfig(Config("verbose"));
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] {
    return d.LogCount("reload refused: the config has errors; the old one stays") > refused;
  }));
  const auto lines = Lines(d, "reload refused: the config has errors; the old one stays");
  CHECK(lines.back().dump().find("log_level: \\\"verbose\\\" is not one of debug, info, warn, "
                                 "error") != std::string::npos);
  REQUIRE(Delivered(d, "evt_1"));
  CHECK(d.WaitForLog("delivery"));  // still info
}

TEST_CASE("a reload with a mistake in a handler kind's settings is refused, naming its line") {
  // The kind's settings are read with the rest of the file: the refusal lists the kind's
  // mistake at its line and column beside another endpoint's, and the old handler runs on.
  TempDir dir;
  Daemon d(dir, Config("info"));
  std::string next = Config("info");
  next.replace(next.find("command: [/bin/false]"), 21, "command: [/bin/false], timeout: soon");
  next += R"(  - name: other
    path: other-without-slash
    verify: none
)";
  const int refused = d.LogCount("reload refused: the config has errors; the old one stays");
  d.WriteConfig(next);
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] {
    return d.LogCount("reload refused: the config has errors; the old one stays") > refused;
  }));
  const std::string said =
      Lines(d, "reload refused: the config has errors; the old one stays").back().dump();
  INFO(said);
  // Line 16 of Config(): `          - {name: fails, exec: {command: [/bin/false], ...}}`.
  CHECK(said.find(":16:57: endpoints[0].routes[0].handlers[0].exec.timeout: \\\"soon\\\" is "
                  "not a duration") != std::string::npos);
  CHECK(said.find(":18:5: endpoints[1].path: ") != std::string::npos);
  REQUIRE(Delivered(d, "evt_1"));
  CHECK(d.WaitForLog("attempt"));  // the old handler, /bin/false, still runs
}

TEST_CASE("with stderr as the journal's stream, each line carries its priority") {
  TempDir dir;
  // What systemd does for a unit with StandardError=journal: stderr is a stream whose
  // device:inode it names in JOURNAL_STREAM. Here the stream is the log file, made first
  // so that the daemon's stderr (opened with O_TRUNC) is that very file.
  const std::string log = dir.path().string() + "/hookbox-1.log";
  WriteFile(log, "");
  struct stat st {};
  REQUIRE(stat(log.c_str(), &st) == 0);
  const std::string stream = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  Daemon d(dir, Config("info"), DaemonOptions{{"JOURNAL_STREAM=" + stream}});
  REQUIRE(Delivered(d, "evt_1"));
  REQUIRE(d.WaitForLog("attempt"));
  auto prefix_of = [&](const std::string& msg) {
    for (const auto& line : RawLines(d)) {
      if (ParseLogLine(line).value("msg", "") == msg) return line.substr(0, 3);
    }
    return std::string("(none)");
  };
  CHECK(prefix_of("listening") == "<6>");
  CHECK(prefix_of("delivery") == "<6>");
  CHECK(prefix_of("attempt") == "<3>");  // the job went dead
  for (const auto& line : RawLines(d)) {
    INFO(line);
    CHECK(line[0] == '<');  // every line, none plain
  }
}

TEST_CASE("without the journal, lines are plain JSON even if JOURNAL_STREAM is inherited") {
  TempDir dir;
  // A daemon started from a unit's shell with its stderr redirected to a file: the
  // variable names the unit's stream, not this file.
  Daemon d(dir, Config("info"), DaemonOptions{{"JOURNAL_STREAM=8:1"}});
  REQUIRE(Delivered(d, "evt_1"));
  REQUIRE(d.WaitForLog("delivery"));
  for (const auto& line : RawLines(d)) {
    INFO(line);
    CHECK(json::parse(line, nullptr, false).is_object());
  }
}
