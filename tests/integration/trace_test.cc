// W3C trace context through real processes (README, "Trace context"): a delivery's
// `traceparent` reaches each handler kind with the producer's trace id and a span id new to
// the attempt (http's header, exec's TRACEPARENT, sql's :traceparent), and the delivery's
// and each attempt's log line and `inbox show` name the same trace; a delivery without one,
// or with a malformed one, starts a trace of its own, the same one wherever it is read.
#include <catch2/catch.hpp>
#include <mutex>

#include "daemon.h"

namespace {

using hookbox::testing::AnswerLine;
using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::LoopbackServer;
using hookbox::testing::ReadLines;
using hookbox::testing::RunSqlite;
using hookbox::testing::TempDir;
using nlohmann::json;

const std::string kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kParent = "00f067aa0ba902b7";

// The traceparent of every request the http handler made, by event id.
class Downstream {
 public:
  int port() const { return server_.port(); }
  std::map<std::string, std::string> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> seen_;
  LoopbackServer server_{[this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    seen_[req.get_header_value("X-Hookbox-Event-Id")] = req.get_header_value("traceparent");
    res.status = 200;
  }};
};

std::string Config(int port) {
  return R"yaml(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 4
endpoints:
  - name: raw
    path: /hooks/raw
    verify: none
    event_id: header:X-Id
    event_type: header:X-Type
    routes:
      - events: ["*"]
        handlers:
          - name: relay
            http: {url: "http://127.0.0.1:)yaml" +
         std::to_string(port) + R"yaml(/events"}
          - name: script
            exec: {command: [/bin/sh, -c, 'echo "$HOOKBOX_EVENT_ID $TRACEPARENT" >> {DIR}/exec']}
          - name: ledger
            sql:
              setup: ["CREATE TABLE IF NOT EXISTS traced (event_id TEXT PRIMARY KEY, traceparent TEXT NOT NULL)"]
              statements: ["INSERT INTO traced VALUES (:event_id, :traceparent)"]
  - name: pay
    path: /hooks/pay
    verify: none
    event_id: header:X-Id
    mode: sync
    routes:
      - events: ["*"]
        handlers:
          - sql:
              setup: ["CREATE TABLE IF NOT EXISTS paid (event_id TEXT PRIMARY KEY, traceparent TEXT NOT NULL)"]
              statements: ["INSERT INTO paid VALUES (:event_id, :traceparent)"]
)yaml";
}

struct Parsed {
  std::string trace_id, span_id, flags;
};
Parsed Split(const std::string& traceparent) {
  REQUIRE(traceparent.size() == 55);
  CHECK(traceparent.substr(0, 3) == "00-");
  return {traceparent.substr(3, 32), traceparent.substr(36, 16), traceparent.substr(53, 2)};
}

// Each log line with `msg` about `event_id`.
std::vector<json> LogLines(const Daemon& d, const std::string& msg, const std::string& event_id) {
  std::vector<json> out;
  for (json& j : d.LogLines(msg)) {
    if (j.value("event_id", "") == event_id) out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

TEST_CASE("trace context: the producer's trace into every handler, its log lines, inbox show") {
  TempDir dir;
  Downstream downstream;
  Daemon d(dir, Config(downstream.port()));
  const std::string producer = "00-" + kTrace + "-" + kParent + "-01";
  const std::string unsampled = "00-" + kTrace.substr(0, 31) + "9-" + kParent + "-00";
  auto post = [&](const std::string& id, const std::string& traceparent) {
    httplib::Headers h = {{"X-Id", id}, {"X-Type", "order.paid"}};
    if (!traceparent.empty()) h.emplace("traceparent", traceparent);
    return AnswerLine(d.Post("/hooks/raw", h, R"({"n":1})"));
  };
  REQUIRE(post("traced", producer) == "200 accepted");
  REQUIRE(post("unsampled", unsampled) == "200 accepted");
  REQUIRE(post("untraced", "") == "200 accepted");
  REQUIRE(post("malformed", "00-" + kTrace + "-" + kParent) == "200 accepted");  // cut short
  REQUIRE(post("uppercase", "00-4BF92F3577B34DA6A3CE929D0E0E4736-" + kParent + "-01") ==
          "200 accepted");

  REQUIRE(Eventually([&] {
    return downstream.seen().size() == 5 && ReadLines(dir.path() / "exec").size() == 5 &&
           RunSqlite(d.db(), "SELECT count(*) FROM traced") == "5\n";
  }));
  std::map<std::string, std::string> exec;
  for (const std::string& line : ReadLines(dir.path() / "exec")) {
    exec[line.substr(0, line.find(' '))] = line.substr(line.find(' ') + 1);
  }
  std::map<std::string, std::string> sql;
  std::istringstream rows(RunSqlite(d.db(), "SELECT event_id || ' ' || traceparent FROM traced"));
  for (std::string line; std::getline(rows, line);) {
    sql[line.substr(0, line.find(' '))] = line.substr(line.find(' ') + 1);
  }
  auto http = downstream.seen();

  // The producer's trace: its trace id and flags in every handler, a span id of the
  // attempt's own (not the producer's, and not another attempt's).
  std::set<std::string> spans;
  for (const std::string& carried : {http["traced"], exec["traced"], sql["traced"]}) {
    INFO(carried);
    const Parsed p = Split(carried);
    CHECK(p.trace_id == kTrace);
    CHECK(p.flags == "01");
    CHECK(p.span_id != kParent);
    spans.insert(p.span_id);
  }
  CHECK(spans.size() == 3);
  CHECK(Split(http["unsampled"]).flags == "00");  // the producer's sampling decision kept

  // No traceparent, or a malformed one: a trace of hookbox's own, the same in each handler
  // (the three attempts of one event share it) and different per event.
  std::set<std::string> own;
  for (const std::string id : {"untraced", "malformed", "uppercase"}) {
    INFO(id);
    const std::string trace = Split(http[id]).trace_id;
    CHECK(trace != kTrace);
    CHECK(Split(exec[id]).trace_id == trace);
    CHECK(Split(sql[id]).trace_id == trace);
    CHECK(Split(http[id]).flags == "01");
    own.insert(trace);

    // Every log line about the event names it, and so does inbox show.
    auto delivery = LogLines(d, "delivery", id);
    REQUIRE(delivery.size() == 1);
    CHECK(delivery[0]["trace_id"] == trace);
    auto attempts = LogLines(d, "attempt", id);
    REQUIRE(attempts.size() == 3);
    for (const json& a : attempts) CHECK(a["trace_id"] == trace);
    CliResult show = d.Cli({"inbox", "show", "raw", id, "--json"});
    REQUIRE(show.exit_code == 0);
    CHECK(json::parse(show.out)["trace_id"] == trace);
    CliResult text = d.Cli({"inbox", "show", "raw", id});
    CHECK(text.out.find("trace_id           " + trace) != std::string::npos);
  }
  CHECK(own.size() == 3);

  auto delivery = LogLines(d, "delivery", "traced");
  REQUIRE(delivery.size() == 1);
  CHECK(delivery[0]["trace_id"] == kTrace);
  for (const json& a : LogLines(d, "attempt", "traced")) {
    CHECK(a["trace_id"] == kTrace);
    CHECK(spans.count(a["span_id"].get<std::string>()) == 1);  // the span each handler got
  }
  CliResult show = d.Cli({"inbox", "show", "raw", "traced", "--json"});
  CHECK(json::parse(show.out)["trace_id"] == kTrace);

  // A duplicate: answered, nothing run again; its line carries its own delivery's trace
  // (none sent here: the derived one), while the event keeps the producer's.
  REQUIRE(post("traced", "") == "200 duplicate");
  auto lines = LogLines(d, "delivery", "traced");
  REQUIRE(lines.size() == 2);
  CHECK(lines[1]["trace_id"] != kTrace);
  CHECK(lines[1]["trace_id"].get<std::string>().size() == 32);
  CHECK(json::parse(d.Cli({"inbox", "show", "raw", "traced", "--json"}).out)["trace_id"] == kTrace);
}

TEST_CASE("trace context: a sync endpoint's sql runs in the accept with the producer's trace") {
  TempDir dir;
  Downstream downstream;
  Daemon d(dir, Config(downstream.port()));
  const std::string producer = "00-" + kTrace + "-" + kParent + "-01";
  REQUIRE(AnswerLine(d.Post("/hooks/pay", {{"X-Id", "pay-1"}, {"traceparent", producer}},
                            R"({"amount":1})")) == "200 accepted");
  REQUIRE(AnswerLine(d.Post("/hooks/pay", {{"X-Id", "pay-2"}}, R"({"amount":2})")) ==
          "200 accepted");
  const std::string rows = RunSqlite(d.db(), "SELECT traceparent FROM paid ORDER BY event_id");
  const std::string first = rows.substr(0, rows.find('\n'));
  const std::string second = rows.substr(rows.find('\n') + 1, 55);
  const Parsed p = Split(first);
  CHECK(p.trace_id == kTrace);
  CHECK(p.span_id != kParent);
  const Parsed own = Split(second);
  CHECK(own.trace_id != kTrace);
  CHECK(json::parse(d.Cli({"inbox", "show", "pay", "pay-2", "--json"}).out)["trace_id"] ==
        own.trace_id);
}

TEST_CASE("trace context: the names hookbox sets are refused in a handler's config") {
  TempDir dir;
  const std::string path = (dir.path() / "bad.yaml").string();
  hookbox::testing::WriteFile(path, R"(
database: /tmp/unused.db
endpoints:
  - name: raw
    path: /hooks/raw
    verify: none
    routes:
      - events: ["*"]
        handlers:
          - http: {url: "http://127.0.0.1:9/x", headers: {traceparent: "00-x"}}
          - exec: {command: [/bin/true], env: {TRACEPARENT: "00-x"}}
)");
  CliResult r = hookbox::testing::RunHookbox({"check-config", "-c", path}, dir.path().string());
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.out.find("traceparent") != std::string::npos);
  CHECK(r.out.find("TRACEPARENT is set by hookbox") != std::string::npos);
}
