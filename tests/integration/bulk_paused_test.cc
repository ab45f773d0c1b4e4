// A bulk verb's --rate beside a paused handler (README, "Bulk retry and replay"), through
// the real daemon and CLI: the plan names each handler's state and the drain time; a --rate
// spread of a paused handler's jobs is refused with the choices, nothing changed (the spread
// would run out during the pause and every job run at once on resume), and a dry run shows
// it; without --rate, or once resumed, the retry acts.
#include <catch2/catch.hpp>
#include <string>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

namespace {

// Handler `record` fails permanently (exit 65) until {DIR}/fixed exists.
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
          - name: record
            exec: {command: [/bin/sh, -c, 'test -f {DIR}/fixed || exit 65']}
)";

int Dead(const Daemon& d) {
  int n = 0;
  for (const json& row : d.Rows()) n += row["status"] == "dead";
  return n;
}

}  // namespace

TEST_CASE("bulk retry --rate refuses a paused handler's spread; the plan says state and drain") {
  TempDir dir;
  Daemon d(dir, kConfig);
  for (int i = 0; i < 30; ++i) {
    auto r = d.Post("/hooks/ep", {}, R"({"id":"e)" + std::to_string(i) + R"(","type":"t"})");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  REQUIRE(Eventually([&] { return Dead(d) == 30; }));
  REQUIRE(d.Cli({"handler", "pause", "ep/record", "--reason", "downstream down"}).exit_code == 0);
  WriteFile(dir / "fixed", "");

  const std::vector<std::string> retry = {"inbox", "retry",  "--dead", "--endpoint",
                                          "ep",    "--rate", "10/s",   "--yes"};
  auto refused = d.Cli(retry);
  CHECK(refused.exit_code == 2);
  CHECK(refused.out.find("  handler state      ep/record paused (downstream down)\n") !=
        std::string::npos);
  CHECK(refused.out.find("  drain time         about 3 s (30 jobs") != std::string::npos);
  CHECK(refused.err.find("ep/record is paused") != std::string::npos);
  CHECK(refused.err.find("hookbox handler resume ep/record") != std::string::npos);
  CHECK(refused.err.find("nothing changed") != std::string::npos);
  CHECK(Dead(d) == 30);
  auto dry = d.Cli({"inbox", "retry", "--dead", "--endpoint", "ep", "--rate", "10/s", "--dry-run"});
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("paused (downstream down)") != std::string::npos);

  // Resumed first, the spread holds from the act on: the plan says so and it acts.
  REQUIRE(d.Cli({"handler", "resume", "ep/record"}).exit_code == 0);
  auto run = d.Cli(retry);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("  handler state      ep/record running\n") != std::string::npos);
  CHECK(run.out.find("re-armed 30 job(s)") != std::string::npos);
  REQUIRE(Eventually([&] { return Dead(d) == 0; }));
}
