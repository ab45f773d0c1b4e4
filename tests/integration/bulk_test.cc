// End-to-end tests of the bulk verbs through the real daemon: rows killed on purpose (a handler
// that fails permanently) are re-armed by `hookbox inbox retry --dead` once the handler is
// fixed, and `hookbox inbox replay` runs 100 processed rows again, the exec handler recording
// the idempotency key and generation it was given. The CLI runs beside the daemon, as an
// operator would run it. On PostgreSQL ([postgres]), two replicas, and two operators running
// the same bulk retry at once from both.
#include <catch2/catch.hpp>
#include <map>
#include <thread>

#include "daemon.h"
#include "tests/pg/pg_testing.h"

using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::ReadLines;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

namespace {

// One endpoint, one exec handler named `record`: it fails permanently (exit 65) until
// {DIR}/fixed exists, then appends "<idempotency key> <generation>" to {DIR}/keys.
constexpr const char* kConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 4
endpoints:
  - name: ep
    path: /hooks/ep
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - name: record
            exec:
              command: [/bin/sh, -c, 'test -f {DIR}/fixed || exit 65; echo "$HOOKBOX_IDEMPOTENCY_KEY $HOOKBOX_REPLAY_GENERATION" >> {DIR}/keys']
              timeout: 5s
)";

void Deliver(const Daemon& d, int from, int to) {
  for (int i = from; i < to; ++i) {
    auto r = d.Post("/hooks/ep", {}, R"({"id":"e)" + std::to_string(i) + R"(","type":"t"})");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
}

int CountStatus(const Daemon& d, const std::string& status) {
  int n = 0;
  for (const json& row : d.Rows()) n += row["status"] == status;
  return n;
}

// Lines of {DIR}/keys, counted.
std::map<std::string, int> Keys(const TempDir& dir) {
  std::map<std::string, int> keys;
  for (const std::string& line : ReadLines(dir / "keys")) ++keys[line];
  return keys;
}

}  // namespace

TEST_CASE("bulk retry: rows killed on purpose run again once the handler is fixed") {
  TempDir dir;
  Daemon d(dir, kConfig);
  Deliver(d, 0, 20);
  REQUIRE(Eventually([&] { return CountStatus(d, "dead") == 20; }));

  // The plan, and nothing changed without --yes.
  auto dry = d.Cli({"inbox", "retry", "--dead", "--endpoint", "ep", "--dry-run", "--json"});
  REQUIRE(dry.exit_code == 0);
  json plan = json::parse(dry.out);
  CHECK(plan["plan"]["rows"] == 20);
  CHECK(plan["plan"]["jobs_by_handler"]["ep/record"] == 20);
  auto refused = d.Cli({"inbox", "retry", "--dead", "--endpoint", "ep"});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("add --yes") != std::string::npos);
  CHECK(refused.out.find("  rows to retry      20\n") != std::string::npos);  // in line
  CHECK(refused.out.find("  rows matched       20\n") != std::string::npos);
  CHECK(refused.out.find("    ep/record" + std::string(8, ' ') + "20\n") !=
        std::string::npos);  // under "jobs"
  CHECK(CountStatus(d, "dead") == 20);
  // A bad filter names its bad part, and changes nothing.
  auto bad = d.Cli({"inbox", "retry", "--dead", "--status", "sleeping", "--yes"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("sleeping") != std::string::npos);
  // So does a --rate that is not N/s or N/min, and the two forms of `inbox retry` mixed.
  for (const char* rate : {"0/s", "fast", "10/h", "-5/s"}) {
    auto bad_rate = d.Cli({"inbox", "retry", "--dead", "--rate", rate, "--yes"});
    INFO(rate);
    CHECK(bad_rate.exit_code == 2);
    CHECK(bad_rate.err.find("--rate takes N/s or N/min") != std::string::npos);
  }
  auto mixed = d.Cli({"inbox", "retry", "ep", "e1", "--dead"});
  CHECK(mixed.exit_code == 1);
  CHECK(mixed.err.find("takes a filter") != std::string::npos);
  auto row_with_filter = d.Cli({"inbox", "retry", "ep", "e1", "--yes"});
  CHECK(row_with_filter.exit_code == 1);
  CHECK(CountStatus(d, "dead") == 20);

  WriteFile(dir / "fixed", "");
  auto run = d.Cli({"inbox", "retry", "--dead", "--endpoint", "ep", "--yes"});
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("re-armed 20 job(s)") != std::string::npos);
  REQUIRE(Eventually([&] { return CountStatus(d, "processed") == 20; }));
  // Each ran once more, under its first run's key.
  auto keys = Keys(dir);
  CHECK(keys.size() == 20);
  for (int i = 0; i < 20; ++i) CHECK(keys["ep:e" + std::to_string(i) + " 0"] == 1);
  // A repeat finds nothing to do.
  auto again = d.Cli({"inbox", "retry", "--dead", "--yes"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("nothing to do") != std::string::npos);
  // The history: the permanent failure, then the success.
  auto shown = d.Cli({"inbox", "show", "ep", "e3", "--json"});
  REQUIRE(shown.exit_code == 0);
  json attempts = json::parse(shown.out)["jobs"][0]["attempts"];
  REQUIRE(attempts.size() == 2);
  CHECK(attempts[0]["outcome"] == "permanent");
  CHECK(attempts[1]["outcome"] == "ok");
}

TEST_CASE("replay of 100 rows: the handler sees new keys and generation 1, each once") {
  TempDir dir;
  WriteFile(dir / "fixed", "");
  Daemon d(dir, kConfig);
  Deliver(d, 0, 100);
  REQUIRE(Eventually([&] { return CountStatus(d, "processed") == 100; }));
  REQUIRE(Keys(dir).size() == 100);

  auto missing = d.Cli({"inbox", "replay", "--endpoint", "ep", "--yes"});
  CHECK(missing.exit_code == 2);  // which handler?
  auto unknown = d.Cli({"inbox", "replay", "--handler", "nope", "--yes"});
  CHECK(unknown.exit_code == 1);

  auto run = d.Cli(
      {"inbox", "replay", "--endpoint", "ep", "--handler", "record", "--yes", "--rate", "1000/s"});
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("re-armed 100 job(s)") != std::string::npos);
  REQUIRE(
      Eventually([&] { return Keys(dir).size() == 200 && CountStatus(d, "processed") == 100; }));
  auto keys = Keys(dir);
  for (int i = 0; i < 100; ++i) {
    const std::string id = "e" + std::to_string(i);
    CHECK(keys["ep:" + id + " 0"] == 1);
    CHECK(keys["ep/replay-1:" + id + " 1"] == 1);
  }
  auto shown = d.Cli({"inbox", "show", "ep", "e7", "--json"});
  REQUIRE(shown.exit_code == 0);
  json job = json::parse(shown.out)["jobs"][0];
  CHECK(job["generation"] == 1);
  REQUIRE(job["attempts"].size() == 2);
  CHECK(job["attempts"][0]["generation"] == 0);
  CHECK(job["attempts"][1]["generation"] == 1);
}

TEST_CASE("replicas: two operators' bulk retries at once re-arm each job once; replay keys",
          "[.postgres]") {
  hookbox::pgtest::TestDatabase db;
  TempDir shared, a_dir, b_dir;
  std::string config = kConfig;
  config.replace(config.find("admin_listen: \"\"\ndatabase: {DB}"),
                 std::string("admin_listen: \"\"\ndatabase: {DB}").size(),
                 "admin_listen: \"\"\ndatabase: \"{DB}\"");
  for (auto at = config.find("{DIR}"); at != std::string::npos; at = config.find("{DIR}")) {
    config.replace(at, 5, shared.path().string());
  }
  Daemon a(a_dir, config, db.url()), b(b_dir, config, db.url());
  for (int i = 0; i < 50; ++i) {
    const Daemon& d = i % 2 ? b : a;
    auto r = d.Post("/hooks/ep", {}, R"({"id":"e)" + std::to_string(i) + R"("})");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  REQUIRE(Eventually(
      [&] { return db.Count("SELECT count(*) FROM jobs WHERE status = 'dead'") == 50; }));

  WriteFile(shared / "fixed", "");
  hookbox::testing::CliResult ra, rb;
  std::thread one([&] { ra = a.Cli({"inbox", "retry", "--dead", "--yes", "--json"}); });
  std::thread two([&] { rb = b.Cli({"inbox", "retry", "--dead", "--yes", "--json"}); });
  one.join();
  two.join();
  REQUIRE(ra.exit_code == 0);
  REQUIRE(rb.exit_code == 0);
  // Each job re-armed by exactly one of them (the second may find none left, or share them).
  CHECK(json::parse(ra.out)["rearmed"].get<int>() + json::parse(rb.out)["rearmed"].get<int>() ==
        50);
  REQUIRE(Eventually(
      [&] { return db.Count("SELECT count(*) FROM jobs WHERE status = 'done'") == 50; }));
  auto keys = Keys(shared);
  CHECK(keys.size() == 50);
  for (const auto& [key, n] : keys) CHECK(n == 1);

  auto replay = a.Cli({"inbox", "replay", "--handler", "record", "--yes", "--json"});
  REQUIRE(replay.exit_code == 0);
  CHECK(json::parse(replay.out)["rearmed"] == 50);
  REQUIRE(Eventually([&] {
    return Keys(shared).size() == 100 &&
           db.Count("SELECT count(*) FROM jobs WHERE status = 'done' AND generation = 1") == 50;
  }));
  keys = Keys(shared);
  for (int i = 0; i < 50; ++i) CHECK(keys["ep/replay-1:e" + std::to_string(i) + " 1"] == 1);
}
