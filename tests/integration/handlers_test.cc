// End-to-end tests of handling: the real daemon runs real handler processes, files and SQL,
// and the tests count side effects (lines a handler appended, rows it inserted), never log
// lines. These are the contract tests of the handler release.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <thread>

#include "daemon.h"

using hookbox::testing::AnswerLine;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::ReadFile;
using hookbox::testing::ReadLines;
using hookbox::testing::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

int CountStatus(const json& rows, const std::string& status) {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(),
                                        [&](const json& r) { return r["status"] == status; }));
}

json Show(const Daemon& d, const std::string& endpoint, const std::string& id) {
  auto r = d.Cli({"inbox", "show", endpoint, id, "--json"});
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

// An exec handler that appends one line per run: "<event id> <attempt> <idempotency key>".
std::string Recorder(const std::string& file, const std::string& extra = "") {
  return R"([/bin/sh, -c, 'echo "$HOOKBOX_EVENT_ID $HOOKBOX_ATTEMPT $HOOKBOX_IDEMPOTENCY_KEY" >> )" +
         file + "; " + extra + "', recorder]";
}

}  // namespace

TEST_CASE("double delivery: N deliveries, some concurrent, run each handler once") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 4
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    event_type: body:/type
    routes:
      - events: ["order.*"]
        handlers:
          - exec: {command: )" +
                    Recorder("{DIR}/runs") + R"(, timeout: 10s}
          - file: {dir: "{DIR}/files"}
)");
  const std::string body = R"({"id":"evt-1","type":"order.paid"})";
  std::vector<std::thread> senders;
  std::atomic<int> ok{0};
  for (int i = 0; i < 10; ++i) {
    senders.emplace_back([&] {
      if (AnswerLine(d.Post("/hooks/open", {}, body)).rfind("200", 0) == 0) ++ok;
    });
  }
  for (auto& t : senders) t.join();
  for (int i = 0; i < 10; ++i) {
    if (AnswerLine(d.Post("/hooks/open", {}, body)).rfind("200", 0) == 0) ++ok;
  }
  CHECK(ok == 20);
  REQUIRE(Eventually([&] { return Show(d, "open", "evt-1")["status"] == "processed"; }));
  // Later deliveries, after processing, run nothing either.
  CHECK(AnswerLine(d.Post("/hooks/open", {}, body)) == "200 duplicate");
  std::this_thread::sleep_for(300ms);
  CHECK(ReadLines(dir / "runs") == std::vector<std::string>{"evt-1 1 open:evt-1"});
  CHECK(ReadFile(dir / "files/open/evt-1.json") == body);
  CHECK(Show(d, "open", "evt-1")["duplicates"] == 20);
}

TEST_CASE("strict_body: same id with another body is 422 and runs nothing") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    strict_body: true
    routes:
      - events: ["*"]
        handlers: [{exec: {command: )" +
                    Recorder("{DIR}/runs") + R"(}}]
)");
  CHECK(AnswerLine(d.Post("/hooks/open", {}, R"({"id":"a","v":1})")) == "200 accepted");
  REQUIRE(Eventually([&] { return ReadLines(dir / "runs").size() == 1; }));
  auto changed = d.Post("/hooks/open", {}, R"({"id":"a","v":2})");
  REQUIRE(changed);
  CHECK(changed->status == 422);
  std::this_thread::sleep_for(300ms);
  CHECK(ReadLines(dir / "runs").size() == 1);
  CHECK(Show(d, "open", "a")["body"] == R"({"id":"a","v":1})");
}

TEST_CASE("a handler that times out: attempt 'timeout', its process group is gone, retried") {
  TempDir dir;
  // Each run records its key, starts a grandchild that writes its pid, and hangs.
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    retry: {max_attempts: 2, base: 100ms, max: 200ms}
    routes:
      - events: ["*"]
        handlers:
          - exec:
              command: )" +
                    Recorder("{DIR}/runs", "sleep 60 & echo $! >> {DIR}/pids; wait") + R"(
              timeout: 1s
)");
  CHECK(AnswerLine(d.Post("/hooks/open", {}, R"({"id":"slow"})")) == "200 accepted");
  REQUIRE(Eventually([&] { return Show(d, "open", "slow")["status"] == "dead"; }, 30s));
  json row = Show(d, "open", "slow");
  REQUIRE(row["jobs"].size() == 1);
  json attempts = row["jobs"][0]["attempts"];
  REQUIRE(attempts.size() == 2);
  for (const json& a : attempts) CHECK(a["outcome"] == "timeout");
  // The second attempt started only after the first was over.
  CHECK(attempts[1]["started_at"].get<std::string>() >=
        attempts[0]["finished_at"].get<std::string>());
  // Same idempotency key on both tries.
  CHECK(ReadLines(dir / "runs") ==
        std::vector<std::string>{"slow 1 open:slow", "slow 2 open:slow"});
  // Every grandchild of the killed process groups is gone.
  auto pids = ReadLines(dir / "pids");
  REQUIRE(pids.size() == 2);
  for (const std::string& pid : pids) {
    INFO(pid);
    CHECK(Eventually([&] { return kill(std::stoi(pid), 0) != 0 && errno == ESRCH; }, 5s));
  }
}

TEST_CASE("retry then success; permanent failure is dead at once; inbox retry runs it again") {
  TempDir dir;
  // Fails with exit 3 until the marker exists (it creates it), then succeeds; events whose id
  // starts with "perm" exit 65 until {DIR}/fixed exists.
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    retry: {max_attempts: 5, base: 50ms, max: 100ms}
    routes:
      - events: ["*"]
        handlers:
          - exec:
              command: )" +
                    Recorder("{DIR}/runs",
                             "case $HOOKBOX_EVENT_ID in perm*) test -e {DIR}/fixed || exit 65;; "
                             "*) test -e {DIR}/marker || { touch {DIR}/marker; exit 3; };; esac") +
                    R"(
)");
  CHECK(AnswerLine(d.Post("/hooks/open", {}, R"({"id":"flaky"})")) == "200 accepted");
  REQUIRE(Eventually([&] { return Show(d, "open", "flaky")["status"] == "processed"; }));
  json flaky = Show(d, "open", "flaky")["jobs"][0]["attempts"];
  REQUIRE(flaky.size() == 2);
  CHECK(flaky[0]["outcome"] == "failed");
  CHECK(flaky[0]["detail"].get<std::string>().find("exit 3") != std::string::npos);
  CHECK(flaky[1]["outcome"] == "ok");

  CHECK(AnswerLine(d.Post("/hooks/open", {}, R"({"id":"perm-1"})")) == "200 accepted");
  REQUIRE(Eventually([&] { return Show(d, "open", "perm-1")["status"] == "dead"; }));
  json perm = Show(d, "open", "perm-1")["jobs"][0];
  CHECK(perm["status"] == "dead");
  CHECK(perm["attempts"].size() == 1);
  CHECK(perm["attempts"][0]["outcome"] == "permanent");

  hookbox::testing::WriteFile(dir / "fixed", "");
  auto retry = d.Cli({"inbox", "retry", "open", "perm-1"});
  CHECK(retry.exit_code == 0);
  REQUIRE(Eventually([&] { return Show(d, "open", "perm-1")["status"] == "processed"; }));
  CHECK(Show(d, "open", "perm-1")["jobs"][0]["attempts"].size() == 2);
  // Nothing dead left to retry; unknown ids are lookup errors.
  CHECK(d.Cli({"inbox", "retry", "open", "perm-1"}).exit_code == 1);
  CHECK(d.Cli({"inbox", "retry", "open", "nope"}).exit_code == 1);
}

TEST_CASE("per-resource order: shuffled sequences run ascending, never two at once") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 4
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    resource: body:/object
    sequence: body:/seq
    routes:
      - events: ["*"]
        handlers:
          - exec:
              command: [/bin/sh, -c, 'echo "start $HOOKBOX_SEQUENCE" >> {DIR}/log; sleep 0.02; echo "end $HOOKBOX_SEQUENCE" >> {DIR}/log']
)");
  std::vector<int> seqs(50);
  for (int i = 0; i < 50; ++i) seqs[i] = i + 1;
  std::shuffle(seqs.begin(), seqs.end(), std::mt19937(42));
  // Two senders at once, so deliveries also race.
  std::vector<std::thread> senders;
  for (int half = 0; half < 2; ++half) {
    senders.emplace_back([&, half] {
      for (int i = half; i < 50; i += 2) {
        json body = {{"id", "e" + std::to_string(seqs[i])}, {"object", "obj-1"}, {"seq", seqs[i]}};
        d.Post("/hooks/open", {}, body.dump());
      }
    });
  }
  for (auto& t : senders) t.join();
  json rows;
  REQUIRE(Eventually([&] {
    rows = d.Rows();
    return rows.size() == 50 && CountStatus(rows, "processed") + CountStatus(rows, "stale") == 50;
  }));
  auto log = ReadLines(dir / "log");
  REQUIRE(log.size() == 2 * static_cast<size_t>(CountStatus(rows, "processed")));
  int last = 0;
  for (size_t i = 0; i < log.size(); i += 2) {
    int seq = std::stoi(log[i].substr(6));
    CHECK(log[i] == "start " + std::to_string(seq));
    CHECK(log[i + 1] == "end " + std::to_string(seq));  // no other start in between
    CHECK(seq > last);
    last = seq;
  }
  CHECK(last == 50);  // the newest event always runs
}

TEST_CASE("sync endpoint with sql: concurrent duplicates make one row; failing SQL is 500") {
  TempDir dir;
  Daemon d(dir, R"yaml(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
endpoints:
  - name: pay
    path: /hooks/pay
    verify: none
    event_id: body:/id
    mode: sync
    routes:
      - events: ["*"]
        handlers:
          - sql:
              setup: ["CREATE TABLE IF NOT EXISTS ledger (event_id TEXT PRIMARY KEY, amount INTEGER NOT NULL CHECK (amount > 0))"]
              statements: ["INSERT INTO ledger VALUES (:event_id, json_extract(:body, '$.amount'))"]
)yaml");
  const std::string body = R"({"id":"pay-1","amount":42})";
  std::vector<std::thread> senders;
  std::atomic<int> accepted{0}, duplicate{0}, other{0};
  for (int i = 0; i < 16; ++i) {
    senders.emplace_back([&] {
      std::string s = AnswerLine(d.Post("/hooks/pay", {}, body));
      if (s == "200 accepted")
        ++accepted;
      else if (s == "200 duplicate")
        ++duplicate;
      else
        ++other;
    });
  }
  for (auto& t : senders) t.join();
  CHECK(accepted == 1);
  CHECK(duplicate == 15);
  CHECK(other == 0);
  auto ledger = hookbox::testing::RunSqlite(d.db(), "SELECT event_id || '=' || amount FROM ledger");
  CHECK(ledger == "pay-1=42\n");
  CHECK(Show(d, "pay", "pay-1")["status"] == "processed");

  // amount 0 breaks the CHECK: 500, and no inbox row, so the producer's retry runs anew.
  auto bad = d.Post("/hooks/pay", {}, R"({"id":"pay-2","amount":0})");
  REQUIRE(bad);
  CHECK(bad->status == 500);
  CHECK(d.Cli({"inbox", "show", "pay", "pay-2"}).exit_code == 1);
  CHECK(hookbox::testing::RunSqlite(d.db(), "SELECT count(*) FROM ledger") == "1\n");
}

TEST_CASE("sync endpoint with exec: failure is 500, the redelivery takes over; waits give 409") {
  TempDir dir;
  // Fails until the marker exists; "slow" events sleep 3 s.
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
endpoints:
  - name: sync
    path: /hooks/sync
    verify: none
    event_id: body:/id
    mode: sync
    sync_wait: 300ms
    routes:
      - events: ["*"]
        handlers:
          - exec:
              command: )" +
                    Recorder("{DIR}/runs",
                             "case $HOOKBOX_EVENT_ID in slow*) sleep 3;; *) test -e {DIR}/marker "
                             "|| exit 3;; esac") +
                    R"(
              timeout: 10s
)");
  auto first = d.Post("/hooks/sync", {}, R"({"id":"s1"})");
  REQUIRE(first);
  CHECK(first->status == 500);
  CHECK(Show(d, "sync", "s1")["jobs"][0]["status"] == "pending");
  std::this_thread::sleep_for(500ms);  // the pool must not pick a sync job up
  CHECK(ReadLines(dir / "runs").size() == 1);

  hookbox::testing::WriteFile(dir / "marker", "");
  CHECK(AnswerLine(d.Post("/hooks/sync", {}, R"({"id":"s1"})")) == "200 duplicate");
  CHECK(Show(d, "sync", "s1")["status"] == "processed");
  CHECK(ReadLines(dir / "runs") == std::vector<std::string>{"s1 1 sync:s1", "s1 2 sync:s1"});

  // A duplicate that arrives while the first still runs waits sync_wait, then gets 409.
  std::string slow_answer;  // Catch2 assertions stay on the test's own thread
  std::thread slow(
      [&] { slow_answer = AnswerLine(d.Post("/hooks/sync", {}, R"({"id":"slow-1"})")); });
  std::this_thread::sleep_for(500ms);
  auto busy = d.Post("/hooks/sync", {}, R"({"id":"slow-1"})");
  REQUIRE(busy);
  CHECK(busy->status == 409);
  CHECK(busy->get_header_value("Retry-After") == "1");
  slow.join();
  CHECK(slow_answer == "200 accepted");
  CHECK(AnswerLine(d.Post("/hooks/sync", {}, R"({"id":"slow-1"})")) == "200 duplicate");
}

TEST_CASE("hookbox send signs as the provider would, and the daemon accepts it") {
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 0
endpoints:
  - name: stripe
    path: /hooks/stripe
    provider: stripe
    secrets: [{value: whsec_send_test}]
  - name: gh
    path: /hooks/gh
    provider: github
    secrets: [{value: gh-send-test}]
)");
  hookbox::testing::WriteFile(dir / "event.json", R"({"id":"evt_sent","type":"invoice.paid"})");
  std::string url = "http://127.0.0.1:" + std::to_string(d.port());
  auto sent = d.Cli({"send", "stripe", dir / "event.json", "--url", url + "/hooks/stripe"});
  CHECK(sent.exit_code == 0);
  CHECK(sent.out.rfind("200 {\"status\":\"ignored\"", 0) == 0);  // no routes: ignored
  CHECK(Show(d, "stripe", "evt_sent")["event_type"] == "invoice.paid");
  auto gh = d.Cli({"send", "gh", dir / "event.json", "--url", url + "/hooks/gh"});
  CHECK(gh.exit_code == 0);
  // Sent to the wrong endpoint, the signature does not verify: exit 1, 401 printed.
  auto wrong = d.Cli({"send", "gh", dir / "event.json", "--url", url + "/hooks/stripe"});
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.out.find("401") != std::string::npos);
}

TEST_CASE("crash recovery: kill -9 while jobs run; after restart everything is processed") {
  TempDir dir;
  // heartbeat_timeout: the killed daemon's leases end 2 s after its last heartbeat.
  Daemon d(dir, R"yaml(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
heartbeat_timeout: 2s
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/sh, -c, 'sleep 0.1; echo "$HOOKBOX_EVENT_ID" >> {DIR}/runs'], timeout: 10s}
          - sql:
              setup: ["CREATE TABLE IF NOT EXISTS effects (event_id TEXT NOT NULL)"]
              statements: ["INSERT INTO effects VALUES (:event_id)"]
          - file: {dir: "{DIR}/files"}
)yaml");
  constexpr int kEvents = 30;
  std::vector<std::string> answered;
  for (int i = 0; i < kEvents; ++i) {
    json body = {{"id", "c" + std::to_string(i)}, {"pad", std::string(2000, 'x')}};
    if (AnswerLine(d.Post("/hooks/open", {}, body.dump())) == "200 accepted") {
      answered.push_back(body["id"]);
    }
  }
  REQUIRE(answered.size() == kEvents);
  std::this_thread::sleep_for(400ms);  // some jobs done, some running, most waiting
  CHECK(d.Kill(SIGKILL) == 128 + SIGKILL);
  d.Start();
  json rows;
  REQUIRE(Eventually(
      [&] {
        rows = d.Rows();
        return CountStatus(rows, "processed") == kEvents;
      },
      60s));
  CHECK(rows.size() == kEvents);  // every 200 survived the kill
  // sql side effects: exactly once per event.
  CHECK(hookbox::testing::RunSqlite(d.db(),
                                    "SELECT count(*), count(DISTINCT event_id) FROM effects") ==
        std::to_string(kEvents) + "|" + std::to_string(kEvents) + "\n");
  // file outputs are whole files; no temporary files are left.
  for (const std::string& id : answered) {
    INFO(id);
    json stored = json::parse(ReadFile(dir / ("files/open/" + id + ".json")), nullptr, false);
    CHECK(stored.value("id", "") == id);
  }
  size_t files = 0;
  for (auto& entry : std::filesystem::directory_iterator(dir / "files/open")) {
    ++files;
    CHECK(entry.path().extension() == ".json");
  }
  CHECK(files == kEvents);
  // exec: at least once (a killed attempt may have run); every event ran.
  auto runs = ReadLines(dir / "runs");
  std::set<std::string> ran(runs.begin(), runs.end());
  CHECK(ran.size() == kEvents);
  auto check = hookbox::testing::RunSqlite(d.db(), "PRAGMA integrity_check");
  CHECK(check == "ok\n");
}

TEST_CASE("an exec handler dies with the daemon (kill -9), so no orphan overlaps its rerun") {
  TempDir dir;
  Daemon d(dir, R"yaml(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 1
heartbeat_timeout: 2s
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/sh, -c, 'echo $$ >> {DIR}/pids; exec sleep 60'], timeout: 2m}
)yaml");
  CHECK(AnswerLine(d.Post("/hooks/open", {}, R"({"id":"orphan"})")) == "200 accepted");
  REQUIRE(Eventually([&] { return ReadLines(dir / "pids").size() == 1; }));
  const int pid = std::stoi(ReadLines(dir / "pids")[0]);
  CHECK(d.Kill(SIGKILL) == 128 + SIGKILL);
  CHECK(Eventually([&] { return kill(pid, 0) != 0 && errno == ESRCH; }, 5s));
  // The restarted daemon releases the dead process's lease once its heartbeat has expired
  // (2 s), not when the 2 min lease does, and runs the job again.
  d.Start();
  CHECK(Eventually([&] { return ReadLines(dir / "pids").size() == 2; }));
}
