// `hookbox inbox retry --waiting` (README, "Bulk retry and replay") through the real daemon
// and CLI: jobs that failed transiently wait in an hour's backoff; once the handler is fixed,
// the bulk verb shows its plan, refuses without --yes, and makes them due now (they run at
// once, keeping their attempt count), or with --rate spreads their due times. The text
// `inbox show` prints the waiting job's next attempt time and each attempt's start and end.
// On SQLite, and on PostgreSQL ([.postgres]).
#include <catch2/catch.hpp>
#include <cstdio>
#include <ctime>
#include <string>

#include "daemon.h"
#include "tests/pg/pg_testing.h"

using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

namespace {

// Handler `flaky` fails transiently (exit 1) until {DIR}/fixed exists; each failure waits an
// hour before the next try.
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
    retry: {max_attempts: 10, base: 1h, max: 1h}
    routes:
      - events: ["*"]
        handlers:
          - name: flaky
            exec: {command: [/bin/sh, -c, 'test -f {DIR}/fixed || exit 1']}
)";

json Job(const Daemon& d, const std::string& event_id) {
  auto shown = d.Cli({"inbox", "show", "ep", event_id, "--json"});
  REQUIRE(shown.exit_code == 0);
  return json::parse(shown.out)["jobs"][0];
}

bool Waiting(const Daemon& d, const std::string& event_id) {
  const json job = Job(d, event_id);
  return job["status"] == "pending" && !job["attempts"].empty() &&
         !job["attempts"].back()["finished_at"].get<std::string>().empty();
}

// Seconds since the epoch of an RFC 3339 UTC time as the inbox prints it (ms precision).
double Seconds(const std::string& t) {
  std::tm tm{};
  double sec = 0;
  REQUIRE(std::sscanf(t.c_str(), "%d-%d-%dT%d:%d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                      &tm.tm_hour, &tm.tm_min, &sec) == 6);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + sec;
}

void RetryWaiting(const std::string& db) {
  TempDir dir;
  Daemon d(dir, kConfig, db);
  for (int i = 0; i < 4; ++i) {
    auto r = d.Post("/hooks/ep", {}, R"({"id":"e)" + std::to_string(i) + R"(","type":"t"})");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  for (int i = 0; i < 4; ++i)
    REQUIRE(Eventually([&] { return Waiting(d, "e" + std::to_string(i)); }));

  // The text show: when the next try is due, and the attempt's start and end, labelled.
  const json job = Job(d, "e0");
  auto text = d.Cli({"inbox", "show", "ep", "e0"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("  next attempt at " + job["next_attempt_at"].get<std::string>()) !=
        std::string::npos);
  const json& attempt = job["attempts"][0];
  CHECK(text.out.find("  attempt 1  started " + attempt["started_at"].get<std::string>() +
                      "  ended " + attempt["finished_at"].get<std::string>()) != std::string::npos);

  // The plan, and nothing changed without --yes.
  auto dry = d.Cli({"inbox", "retry", "--waiting", "--endpoint", "ep", "--dry-run", "--json"});
  REQUIRE(dry.exit_code == 0);
  const json plan = json::parse(dry.out)["plan"];
  CHECK(plan["rows"] == 4);
  CHECK(plan["jobs_by_handler"]["ep/flaky"] == 4);
  auto refused = d.Cli({"inbox", "retry", "--waiting", "--endpoint", "ep"});
  CHECK(refused.exit_code == 2);
  CHECK(refused.out.find("plan: retry waiting jobs now") != std::string::npos);
  CHECK(refused.err.find("add --yes") != std::string::npos);
  CHECK(Job(d, "e0")["next_attempt_at"] == job["next_attempt_at"]);
  auto both = d.Cli({"inbox", "retry", "--waiting", "--dead", "--yes"});
  CHECK(both.exit_code != 0);

  // --rate spreads the due times, one a minute, in received order (the downstream still
  // fails: the first runs at once and waits its hour again).
  auto spread =
      d.Cli({"inbox", "retry", "--waiting", "--endpoint", "ep", "--rate", "1/min", "--yes"});
  REQUIRE(spread.exit_code == 0);
  CHECK(spread.out.find("retry --waiting: re-armed 4 job(s)") != std::string::npos);
  const double e1 = Seconds(Job(d, "e1")["next_attempt_at"]);
  const double e2 = Seconds(Job(d, "e2")["next_attempt_at"]);
  const double e3 = Seconds(Job(d, "e3")["next_attempt_at"]);
  CHECK(e2 - e1 == Approx(60).margin(0.01));
  CHECK(e3 - e2 == Approx(60).margin(0.01));
  // Not the hour's backoff any more: e1 is the second, a minute from the retry.
  CHECK(e1 < static_cast<double>(std::time(nullptr)) + 600);

  // Fixed (once e0's second try has failed): all of them due now, they run at once, their
  // attempts counted on.
  REQUIRE(Eventually([&] { return Waiting(d, "e0") && Job(d, "e0")["attempts"].size() == 2; }));
  WriteFile(dir / "fixed", "");
  auto run = d.Cli({"inbox", "retry", "--waiting", "--endpoint", "ep", "--yes"});
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("re-armed 4 job(s)") != std::string::npos);
  for (int i = 0; i < 4; ++i) {
    const std::string id = "e" + std::to_string(i);
    REQUIRE(Eventually([&] { return Job(d, id)["status"] == "done"; }));
    CHECK(Job(d, id)["attempts"].size() == (i == 0 ? 3 : 2));
  }
  auto again = d.Cli({"inbox", "retry", "--waiting", "--yes"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("nothing to do") != std::string::npos);
}

}  // namespace

TEST_CASE("inbox retry --waiting: jobs in backoff due now, or spread by --rate", "[cli]") {
  RetryWaiting("");
}

TEST_CASE("inbox retry --waiting on PostgreSQL", "[.postgres]") {
  hookbox::pgtest::TestDatabase db;
  RetryWaiting(db.url());
}
