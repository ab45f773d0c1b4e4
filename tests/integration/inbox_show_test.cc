// `hookbox inbox show` in text says why a job died: each job's attempts with their
// number, time, outcome and the end of their detail (README, "Command line"), as --json
// has them. The real daemon runs a handler that fails twice; the real CLI shows the row.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "daemon.h"

using namespace hookbox::testing;
using nlohmann::json;

TEST_CASE("inbox show (text) lists each attempt with its outcome and the end of its detail") {
  TempDir dir;
  // 300 zeros, then the line that says what went wrong: the end is what must show.
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 1
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    retry: {max_attempts: 2, base: 10ms, max: 10ms}
    routes:
      - events: ["*"]
        handlers:
          - name: crm
            exec: {command: [/bin/sh, -c, 'printf "%0300d" 0 >&2; echo crm said 503 >&2; exit 3']}
)");
  auto r = d.Post("/hooks/open", {}, R"({"id":"evt_1"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  REQUIRE(Eventually([&] {
    auto shown = d.Cli({"inbox", "show", "open", "evt_1", "--json"});
    return shown.exit_code == 0 && json::parse(shown.out)["jobs"][0]["status"] == "dead";
  }));
  const json as_json = json::parse(d.Cli({"inbox", "show", "open", "evt_1", "--json"}).out);
  const json& attempts = as_json["jobs"][0]["attempts"];
  REQUIRE(attempts.size() == 2);

  CliResult text = d.Cli({"inbox", "show", "open", "evt_1"});
  REQUIRE(text.exit_code == 0);
  INFO(text.out);
  std::vector<std::string> attempt_lines;
  std::istringstream lines(text.out);
  bool after_job = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("job crm", 0) == 0) {
      after_job = true;
      CHECK(line.find("dead (2 attempts)") != std::string::npos);
      continue;
    }
    if (after_job && line.rfind("  attempt ", 0) == 0) attempt_lines.push_back(line);
  }
  REQUIRE(attempt_lines.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const std::string& line = attempt_lines[i];
    CHECK(line.rfind("  attempt " + std::to_string(i + 1) + "  ", 0) == 0);
    CHECK(line.find(attempts[i]["finished_at"].get<std::string>()) != std::string::npos);
    CHECK(line.find("failed") != std::string::npos);
    // The end of the detail, cut to its last 200 bytes: the error is there, the padding
    // before it is not all there.
    CHECK(line.find("crm said 503") != std::string::npos);
    CHECK(line.find("...") != std::string::npos);
    CHECK(line.size() < 320);
  }
}
