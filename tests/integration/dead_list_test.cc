// The dead view of the CLI (README, "Finding events"): `inbox list --status dead` in text says
// what died and why, each row with its dead jobs' handlers and last errors on one line each,
// cut to a column, and a page the limit cut short ends with how many more rows match. The
// real daemon kills the jobs (exec handlers that fail permanently), the real CLI lists them;
// on SQLite, and on PostgreSQL ([.postgres]).
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "daemon.h"
#include "tests/pg/pg_testing.h"

using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

// Endpoint `ep`: handler `crm` fails permanently with a long, two-line error; `audit` does
// too, but only for the event with id `both`; otherwise it succeeds.
constexpr const char* kConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: "{DB}"
workers: 2
endpoints:
  - name: ep
    path: /hooks/ep
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - name: crm
            exec: {command: [/bin/sh, -c, 'printf "%0100d\n" 0 >&2; echo crm said 503 >&2; exit 65']}
          - name: audit
            exec: {command: [/bin/sh, -c, 'test "$HOOKBOX_EVENT_ID" != both || { echo audit full >&2; exit 65; }']}
)";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Code points, not bytes: the column's width is in characters ("…" is three bytes).
size_t Characters(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

void DeadView(const std::string& db) {
  TempDir dir;
  Daemon d(dir, kConfig, db);
  for (int i = 0; i < 4; ++i) {
    auto r = d.Post("/hooks/ep", {}, R"({"id":"e)" + std::to_string(i) + R"("})");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  REQUIRE(d.Post("/hooks/ep", {}, R"({"id":"both"})")->status == 200);
  REQUIRE(Eventually([&] {
    CliResult h = d.Cli({"handler", "list", "--json"});
    int64_t dead = 0, waiting = 0;
    for (const json& x : json::parse(h.out)) {
      dead += x["dead"].get<int64_t>();
      waiting +=
          x["pending"].get<int64_t>() + x["due"].get<int64_t>() + x["running"].get<int64_t>();
    }
    return dead == 6 && waiting == 0;
  }));

  SECTION("every row fits the page: handler and last error, no more-rows line") {
    CliResult all = d.Cli({"inbox", "list", "--status", "dead"});
    REQUIRE(all.exit_code == 0);
    INFO(all.out);
    const std::vector<std::string> lines = Lines(all.out);
    REQUIRE(lines.size() == 7);  // header, five rows, `both`'s second dead job
    CHECK(lines[0].find("HANDLER") != std::string::npos);
    CHECK(lines[0].find("LAST ERROR") != std::string::npos);
    // Newest first: `both` with its two dead jobs, the second under the first.
    CHECK(lines[1].find("both") != std::string::npos);
    CHECK(lines[2].find("both") == std::string::npos);
    CHECK(lines[2].find("audit") == lines[1].find("crm"));
    CHECK(lines[2].find("exit 65; output: audit full") != std::string::npos);
    for (size_t i = 1; i < lines.size(); ++i) {
      if (i == 2) continue;
      const std::string& line = lines[i];
      CHECK(line.find("crm") != std::string::npos);
      // One line, cut around "…" to its start and its end: the exit, and what crm said.
      CHECK(line.find("exit 65; output: 000") != std::string::npos);
      CHECK(line.find("\u2026") != std::string::npos);
      CHECK(line.find("0 crm said 503") != std::string::npos);
      const std::string error = line.substr(line.find("exit 65"));
      CHECK(Characters(error) == 60);
    }
    CHECK(all.out.find("more row") == std::string::npos);
  }

  SECTION("the limit leaves rows out: the page says how many more match") {
    CliResult page = d.Cli({"inbox", "list", "--status", "dead", "--limit", "2"});
    REQUIRE(page.exit_code == 0);
    INFO(page.out);
    const std::vector<std::string> lines = Lines(page.out);
    REQUIRE(lines.size() == 5);  // header, `both` (two lines), one more row, the count
    CHECK(lines.back() ==
          "\u2026 3 more rows match; --limit 5 shows them all (or narrow the "
          "filter)");
    CliResult one_more = d.Cli({"inbox", "list", "--limit", "4"});
    REQUIRE(one_more.exit_code == 0);
    CHECK(Lines(one_more.out).back().starts_with("\u2026 1 more row matches; --limit 5"));
    // --json is for scripts: the page and nothing else.
    CliResult as_json = d.Cli({"inbox", "list", "--status", "dead", "--limit", "2", "--json"});
    REQUIRE(as_json.exit_code == 0);
    CHECK(json::parse(as_json.out).size() == 2);
  }
}

}  // namespace

TEST_CASE("inbox list --status dead: handler, last error, and how many more rows", "[cli]") {
  DeadView("");
}

TEST_CASE("inbox list --status dead on PostgreSQL", "[.postgres]") {
  hookbox::pgtest::TestDatabase db;
  DeadView(db.url());
}
