// End-to-end tests of the dispatcher with real `exec` children: an exec handler with
// `concurrency: 32` has its children running at the same time (their overlap measured from
// the times they wrote), never more than 32; and a daemon killed with -9 between a batched
// claim and the finishes of its attempts loses nothing: after the restart every job runs
// again and finishes, none more often than the lease rules allow (the killed attempt and
// one more), and the killed attempts' children did not outlive the daemon.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "daemon.h"

using hookbox::testing::AnswerLine;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::ReadLines;
using hookbox::testing::RunSqlite;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using namespace std::chrono_literals;

namespace {

std::string OpenEndpoint(const std::string& exec) {
  return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    event_type: body:/type
    routes:
      - events: ["*"]
        handlers:
          - exec: )" +
         exec + "\n";
}

void Send(const Daemon& d, int count) {
  for (int i = 0; i < count; ++i) {
    const std::string body = R"({"id":"e)" + std::to_string(i) + R"(","type":"t"})";
    REQUIRE(AnswerLine(d.Post("/hooks/open", {}, body)) == "200 accepted");
  }
}

// Running: it exists and is not a zombie (whoever reaps orphans here may be slow to).
bool Running(pid_t pid) {
  std::istringstream stat(hookbox::testing::ReadFile("/proc/" + std::to_string(pid) + "/stat"));
  std::string pid_text, comm, state;
  stat >> pid_text >> comm >> state;
  return !state.empty() && state != "Z";
}

int Count(const Daemon& d, const std::string& sql) { return std::stoi(RunSqlite(d.db(), sql)); }

}  // namespace

TEST_CASE("exec concurrency 32: the children run at the same time, never more than 32") {
  TempDir dir;
  // Each child writes "start <ns>" and "end <ns>" lines around a 1 s sleep.
  Daemon d(
      dir,
      OpenEndpoint(
          R"x({command: [/bin/sh, -c, 'echo "start $(date +%s%N)" >> {DIR}/times; sleep 1; echo "end $(date +%s%N)" >> {DIR}/times'], timeout: 30s, concurrency: 32})x"));
  Send(d, 64);
  REQUIRE(Eventually(
      [&] { return Count(d, "SELECT count(*) FROM jobs WHERE status = 'done'") == 64; }, 60s));
  // The most children running at once: walk the starts and ends in time order.
  std::vector<std::pair<long long, int>> edges;
  for (const std::string& line : ReadLines(dir / "times")) {
    std::istringstream in(line);
    std::string what;
    long long ns = 0;
    in >> what >> ns;
    edges.emplace_back(ns, what == "start" ? 1 : -1);
  }
  REQUIRE(edges.size() == 128);
  std::sort(edges.begin(), edges.end());  // at a tie, an end (-1) before a start
  int running = 0, peak = 0;
  for (const auto& [ns, delta] : edges) peak = std::max(peak, running += delta);
  INFO("most children running at once: " << peak);
  CHECK(peak <= 32);
  // 64 one-second children took far less than 64 s, and most of 32 ran together.
  CHECK(peak >= 16);
}

TEST_CASE("kill -9 between a batched claim and its finishes: every job runs again, once") {
  TempDir dir;
  // Each run records "<id> <attempt> <pid>", then (until {DIR}/fast exists) becomes a
  // 60 s sleep: the same process, so the daemon's death must take it along. The dead
  // daemon's heartbeat expires 2 s after its last beat.
  const std::string config =
      "heartbeat_timeout: 2s" +
      OpenEndpoint(
          R"({command: [/bin/sh, -c, 'echo "$HOOKBOX_EVENT_ID $HOOKBOX_ATTEMPT $$" >> {DIR}/runs; [ -e {DIR}/fast ] || exec sleep 60'], timeout: 120s, concurrency: 32})");
  Daemon d(dir, config);
  Send(d, 20);
  // All 20 claimed and running, none finished.
  REQUIRE(Eventually([&] { return ReadLines(dir / "runs").size() == 20; }));
  CHECK(Count(d, "SELECT count(*) FROM jobs WHERE status = 'processing'") == 20);
  CHECK(Count(d, "SELECT count(*) FROM attempts WHERE finished_at IS NULL") == 20);
  std::vector<pid_t> first_children;
  for (const std::string& line : ReadLines(dir / "runs")) {
    first_children.push_back(std::stoi(line.substr(line.rfind(' ') + 1)));
  }

  d.Kill(SIGKILL);
  // The children die with the daemon (PR_SET_PDEATHSIG), long before their 60 s.
  CHECK(Eventually(
      [&] {
        return std::all_of(first_children.begin(), first_children.end(),
                           [](pid_t pid) { return !Running(pid); });
      },
      10s));

  WriteFile(dir / "fast", "");
  // The restart ends the dead process's leases once its heartbeat has expired: no wait for
  // the 150 s lease.
  d.Start();
  REQUIRE(Eventually(
      [&] { return Count(d, "SELECT count(*) FROM jobs WHERE status = 'done'") == 20; }, 30s));
  // Each event ran twice: the killed attempt 1, then attempt 2, which finished.
  std::map<std::string, std::vector<std::string>> attempts;
  for (const std::string& line : ReadLines(dir / "runs")) {
    std::istringstream in(line);
    std::string id, attempt;
    in >> id >> attempt;
    attempts[id].push_back(attempt);
  }
  CHECK(attempts.size() == 20);
  for (const auto& [id, tries] : attempts) {
    INFO(id);
    CHECK(tries == std::vector<std::string>{"1", "2"});
  }
  CHECK(Count(d, "SELECT count(*) FROM attempts WHERE outcome = 'ok'") == 20);
  CHECK(Count(d, "SELECT count(*) FROM attempts WHERE detail LIKE 'abandoned%'") == 20);
  CHECK(Count(d, "SELECT count(*) FROM inbox WHERE status = 'processed'") == 20);
}
