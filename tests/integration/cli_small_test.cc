// The small CLI fixes of issue 44 (item 7), through the real binary: `-c FILE` before the
// verb as after it, `inbox list`'s status column wide enough for "processing", the bulk
// plan's numbers in one column, unexpected arguments named in the order given, and a bulk
// verb's time printed in milliseconds, not as a raw double.
#include <catch2/catch.hpp>
#include <regex>
#include <string>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::RunHookbox;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

constexpr const char* kConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: "{DB}"
workers: 1
endpoints:
  - name: ep
    path: /hooks/ep
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - name: record
            exec: {command: [/bin/sh, -c, 'test -f {DIR}/fixed || exit 65']}
)";

}  // namespace

TEST_CASE("cli: -c before the verb; status and plan columns; extras; bulk seconds in ms", "[cli]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  auto r = d.Post("/hooks/ep", {}, R"({"id":"e1","type":"t"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  REQUIRE(Eventually([&] {
    auto rows = d.Cli({"inbox", "list", "--json"});
    return rows.exit_code == 0 && json::parse(rows.out).at(0)["status"] == "dead";
  }));

  auto before = RunHookbox({"-c", d.config_path(), "inbox", "show", "ep", "e1"}, dir / ".");
  CHECK(before.exit_code == 0);
  CHECK(before.out.find("status             dead") != std::string::npos);

  // The table's status column holds its longest word; the plan's numbers are in one column.
  auto table = d.Cli({"inbox", "list"});
  REQUIRE(table.exit_code == 0);
  const size_t header = table.out.find("STATUS");
  const size_t dups = table.out.find("DUPS");
  REQUIRE(dups != std::string::npos);
  CHECK(dups - header == std::string("processing  ").size());
  auto plan = d.Cli({"inbox", "retry", "--dead", "--endpoint", "ep", "--dry-run"});
  CHECK(plan.out.find("  rows matched       1\n  rows to retry      1\n  jobs               1\n") !=
        std::string::npos);

  // Arguments a verb does not take are named in the order given (CLI11 reversed them).
  auto extras = d.Cli({"stats", "--since", "1h"});
  CHECK(extras.exit_code == 1);
  CHECK(extras.err.find("not expected: --since 1h") != std::string::npos);

  auto retried = d.Cli({"inbox", "retry", "--dead", "--endpoint", "ep", "--yes"});
  REQUIRE(retried.exit_code == 0);
  INFO(retried.out);
  CHECK(
      std::regex_search(retried.out, std::regex(R"(re-armed 1 job\(s\) in [0-9]+\.[0-9]{3} s\n)")));
}
