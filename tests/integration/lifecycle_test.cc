// End-to-end tests of a row's lifecycle at its edges: a sync endpoint's leases while its jobs
// run one after another, `inbox clear` and the purge while a job runs, and what `--json` shows
// of bytes that are not UTF-8. The real daemon runs real handler processes; the tests read what
// the handlers appended and what the CLI prints. Where a test needs time to have passed (a
// lease run out, a row past retention), it moves the stored time with `sqlite3`, as
// service_test.cc's purge test does, instead of waiting.
#include <catch2/catch.hpp>
#include <thread>

#include "daemon.h"

using hookbox::testing::AnswerLine;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::ReadLines;
using hookbox::testing::RunSqlite;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;
using Lines = std::vector<std::string>;

namespace {

// An exec handler that appends "start <tag> <event id>" to {DIR}/runs, waits `wait` (shell),
// then appends "end <tag> <event id>".
std::string Logged(const std::string& tag, const std::string& wait) {
  return R"([/bin/sh, -c, 'echo "start $0 $HOOKBOX_EVENT_ID" >> {DIR}/runs; )" + wait +
         R"(; echo "end $0 $HOOKBOX_EVENT_ID" >> {DIR}/runs', )" + tag + "]";
}

// Waits (bounded) for a line in the runs file.
bool Ran(const TempDir& dir, const std::string& line) {
  return Eventually([&] {
    for (const std::string& l : ReadLines(dir / "runs"))
      if (l == line) return true;
    return false;
  });
}

// Stored time moved as if it had passed; the daemon may be writing, so wait for its lock.
void AgeWithSql(const Daemon& d, const std::string& sql) {
  RunSqlite(d.db(), "PRAGMA busy_timeout = 5000; " + sql);
}

json ShowJson(const Daemon& d, const std::string& endpoint, const std::string& id) {
  auto r = d.Cli({"inbox", "show", endpoint, id, "--json"});
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("sync with three handlers: each job's lease covers its own run; a duplicate waits") {
  // Each job is leased when it starts, for its own timeout. The handlers run one after
  // another, so one lease taken at accept for all of them runs out while the last one runs,
  // and a redelivery then takes that job over: two runs at once, and 500 to the first
  // request after every handler succeeded.
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 1
endpoints:
  - name: sync
    path: /hooks/sync
    verify: none
    event_id: body:/id
    mode: sync
    sync_wait: 10s
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: )" +
                    Logged("a", "sleep 1") +
                    R"(, timeout: 2s}
          - exec: {command: )" +
                    Logged("b", "sleep 1") +
                    R"(, timeout: 2s}
          - exec: {command: )" +
                    Logged("c", "sleep 1") +
                    R"(, timeout: 2s}
)");
  std::string first;  // Catch2 assertions stay on the test's own thread
  std::thread request([&] { first = AnswerLine(d.Post("/hooks/sync", {}, R"({"id":"e1"})")); });
  REQUIRE(Ran(dir, "start a e1"));
  // While a runs, the lease the accept took runs out, as it does when the handlers before
  // the last take longer than it (in the issue: three handlers of 19 s, a lease of 50 s).
  AgeWithSql(d,
             "UPDATE jobs SET lease_until = '2020-01-01T00:00:00.000Z'"
             " WHERE status = 'processing'");
  REQUIRE(Ran(dir, "start c e1"));
  // The producer's retry arrives while c runs: c's lease, renewed as it started, is live.
  const std::string second = AnswerLine(d.Post("/hooks/sync", {}, R"({"id":"e1"})"));
  request.join();
  CHECK(first == "200 accepted");
  CHECK(second == "200 duplicate");
  CHECK(ReadLines(dir / "runs") ==
        Lines{"start a e1", "end a e1", "start b e1", "end b e1", "start c e1", "end c e1"});
  CHECK(ShowJson(d, "sync", "e1")["status"] == "processed");
  CHECK(d.Kill(SIGTERM) == 0);
}

TEST_CASE("inbox clear refuses a row whose job runs (exit 3); the resource's order holds") {
  // The clear must not delete the row under its running attempt: the next event of the same
  // resource would then run beside it.
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
endpoints:
  - name: ordered
    path: /hooks/ordered
    verify: none
    event_id: body:/id
    resource: body:/r
    sequence: body:/s
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: )" +
                    Logged("h", "while [ ! -e {DIR}/go ]; do sleep 0.05; done") +
                    R"(, timeout: 20s}
)");
  REQUIRE(AnswerLine(d.Post("/hooks/ordered", {}, R"({"id":"o1","r":"x","s":1})")) ==
          "200 accepted");
  REQUIRE(Ran(dir, "start h o1"));
  REQUIRE(AnswerLine(d.Post("/hooks/ordered", {}, R"({"id":"o2","r":"x","s":2})")) ==
          "200 accepted");

  auto refused = d.Cli({"inbox", "clear", "ordered", "o1"});
  CHECK(refused.exit_code == 3);
  CHECK(refused.err.find("event is being processed") != std::string::npos);
  CHECK(refused.out.empty());
  CHECK(ShowJson(d, "ordered", "o1")["jobs"][0]["status"] == "processing");

  WriteFile(dir / "go", "");
  REQUIRE(Eventually([&] { return ShowJson(d, "ordered", "o2")["status"] == "processed"; }));
  CHECK(ReadLines(dir / "runs") == Lines{"start h o1", "end h o1", "start h o2", "end h o2"});
  CHECK(ShowJson(d, "ordered", "o1")["status"] == "processed");
  // Once its attempt has ended, the row clears.
  auto cleared = d.Cli({"inbox", "clear", "ordered", "o1"});
  CHECK(cleared.exit_code == 0);
  CHECK(d.Cli({"inbox", "show", "ordered", "o1"}).exit_code == 1);
  CHECK(d.Kill(SIGTERM) == 0);
}

TEST_CASE("purge: a dead row whose other job still runs stays; dry run and purge agree") {
  // A row is dead as soon as one job is, and the purge must not delete it while another of
  // its jobs still runs.
  TempDir dir;
  Daemon d(dir, R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 2
endpoints:
  - name: two
    path: /hooks/two
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/sh, -c, 'exit 65'], timeout: 5s}
          - exec: {command: )" +
                    Logged("slow", "while [ ! -e {DIR}/go ]; do sleep 0.05; done") +
                    R"(, timeout: 20s}
)");
  REQUIRE(AnswerLine(d.Post("/hooks/two", {}, R"({"id":"t1"})")) == "200 accepted");
  REQUIRE(Ran(dir, "start slow t1"));
  REQUIRE(Eventually([&] { return ShowJson(d, "two", "t1")["status"] == "dead"; }));
  // Past retention.dead (30 days), as time would take it.
  AgeWithSql(d, "UPDATE inbox SET received_at = '2020-01-01T00:00:00.000Z'");
  auto purge = [&](bool dry_run) {
    auto r = dry_run ? d.Cli({"purge", "--dry-run", "--json"}) : d.Cli({"purge", "--json"});
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out)["dead"].get<int>();
  };
  CHECK(purge(true) == 0);
  CHECK(purge(false) == 0);
  CHECK(d.Rows().size() == 1);

  WriteFile(dir / "go", "");
  REQUIRE(Ran(dir, "end slow t1"));
  REQUIRE(Eventually([&] {
    const json shown = ShowJson(d, "two", "t1");  // the loop must not outlive it
    for (const json& job : shown["jobs"])
      if (job["status"] == "processing") return false;
    return true;
  }));
  CHECK(purge(true) == 1);
  CHECK(purge(false) == 1);
  CHECK(d.Rows().empty());
  CHECK(d.Kill(SIGTERM) == 0);
}

TEST_CASE("--json is exact: a field that is not UTF-8 also comes as <field>_base64") {
  // The JSON must not replace such a byte with U+FFFD, which would lose it and not say which.
  TempDir dir;
  Daemon d(dir, hookbox::testing::kRawEndpointConfig);
  const std::string id = "id-\xff";
  const std::string body = "\xfe\xff{\"a\":1}";
  const std::string answer =
      d.Raw("POST /hooks/raw HTTP/1.1\r\nHost: h\r\nX-Id: " + id +
            "\r\nX-Type: caf\xc3\xa9\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\nConnection: close\r\n\r\n" + body);
  REQUIRE(answer.rfind("HTTP/1.1 200", 0) == 0);
  REQUIRE(AnswerLine(d.Post("/hooks/raw", {{"X-Id", "plain"}, {"X-Type", "t"}}, "{}")) ==
          "200 ignored");

  json rows = d.Rows();
  REQUIRE(rows.size() == 2);
  const bool first_odd = rows[0].contains("event_id_base64");
  const json& odd = first_odd ? rows[0] : rows[1];
  const json& plain = first_odd ? rows[1] : rows[0];
  CHECK(odd["event_id_base64"] == "aWQt/w==");  // "id-" 0xff
  CHECK(odd["event_id"] == "id-\xef\xbf\xbd");  // the string, for reading: U+FFFD
  CHECK(odd["event_type"] == "caf\xc3\xa9");    // UTF-8: as it is, nothing beside it
  CHECK_FALSE(odd.contains("event_type_base64"));
  CHECK(plain["event_id"] == "plain");
  CHECK_FALSE(plain.contains("event_id_base64"));

  // The exact bytes name the row again, and show adds the body's.
  json shown = ShowJson(d, "raw", id);
  CHECK(shown["event_id_base64"] == "aWQt/w==");
  CHECK(shown["body_base64"] == "/v97ImEiOjF9");  // 0xfe 0xff {"a":1}
  CHECK_FALSE(ShowJson(d, "raw", "plain").contains("body_base64"));
  // The text for a terminal escapes each byte itself and leaves the base64 to scripts.
  auto text = d.Cli({"inbox", "show", "raw", id});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("_base64") == std::string::npos);
  CHECK(text.out.find("id-\\xff") != std::string::npos);
  CHECK(d.Kill(SIGTERM) == 0);
}
