// End to end: a job names its handler, and a config edit must never give a waiting job to
// another handler nor make it dead. The real daemon, reloaded with SIGHUP between a job's
// failed attempt and its retry; the side effects counted are the lines each handler's script
// appends, and the CLI shows what an operator sees.
#include <catch2/catch.hpp>
#include <string>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::ReadLines;
using hookbox::testing::RunSqlite;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;

namespace {

// One endpoint; `routes` is the YAML list under it. Retries wait up to an hour (full jitter),
// so a failed job is waiting for its retry when the test reloads; the test makes it due.
std::string Config(const std::string& routes, int workers = 1) {
  return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: )" +
         std::to_string(workers) +
         R"(
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    event_type: body:/type
    retry: {max_attempts: 10, base: 1h, max: 1h}
    routes:
)" + routes;
}

// A script that appends its name to {DIR}/ran, then succeeds only once {DIR}/ok exists.
void WriteScript(const TempDir& dir, const std::string& name) {
  WriteFile(dir / (name + ".sh"),
            "echo " + name + " >> " + (dir / "ran") + "\ntest -f " + (dir / "ok") + "\n");
}

std::string Route(const std::string& glob, const std::string& script,
                  const std::string& extra = "") {
  return "      - events: [\"" + glob + "\"]\n        handlers:\n          - {" + extra +
         "exec: {command: [/bin/sh, \"{DIR}/" + script + ".sh\"]}}\n";
}

json Show(const Daemon& d, const std::string& id) {
  auto r = d.Cli({"inbox", "show", "open", id, "--json"});
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

// Reloads and waits for the daemon to say it did.
void Reload(Daemon& d, const std::string& config) {
  const int before = d.LogCount("reloaded");
  d.WriteConfig(config);
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] { return d.LogCount("reloaded") > before; }));
}

// What an operator can always do: make waiting jobs due now.
void MakeDue(const Daemon& d) {
  RunSqlite(d.db(),
            "UPDATE jobs SET next_attempt_at = '2000-01-01T00:00:00.000Z'"
            " WHERE status = 'pending' AND next_attempt_at < '9999'");
}

}  // namespace

TEST_CASE("a waiting retry stays with its handler when a route is added above it") {
  TempDir dir;
  WriteScript(dir, "invoice");
  WriteScript(dir, "customer");
  Daemon d(dir, Config(Route("invoice.*", "invoice")));
  auto r = d.Post("/hooks/open", {}, R"({"id":"evt_fail_2","type":"invoice.paid"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  // The first attempt fails; the job waits for its retry.
  REQUIRE(Eventually([&] { return Show(d, "evt_fail_2")["jobs"][0]["attempts"].size() == 1; }));
  const std::string handler = Show(d, "evt_fail_2")["jobs"][0]["handler"];
  CHECK(handler.rfind("exec.sh.", 0) == 0);  // /bin/sh runs every script here

  // A route above it, the handler's timeout edited: the same handler, by name.
  Reload(d, Config(Route("customer.*", "customer") +
                   "      - events: [\"invoice.*\"]\n        handlers:\n          - exec: "
                   "{command: [/bin/sh, \"{DIR}/invoice.sh\"], timeout: 20s}\n"));
  WriteFile(dir / "ok", "");
  MakeDue(d);
  REQUIRE(Eventually([&] { return Show(d, "evt_fail_2")["status"] == "processed"; }));
  json shown = Show(d, "evt_fail_2");
  CHECK(shown["jobs"].size() == 1);
  CHECK(shown["jobs"][0]["handler"] == handler);
  for (const std::string& line : ReadLines(dir / "ran")) CHECK(line == "invoice");
  CHECK(ReadLines(dir / "ran").size() >= 2);
}

TEST_CASE("a removed handler's jobs are held and reported, then reassigned or released") {
  TempDir dir;
  WriteScript(dir, "invoice");
  WriteScript(dir, "customer");
  const std::string both = Route("customer.*", "customer") + Route("invoice.*", "invoice");
  Daemon d(dir, Config(both));
  for (const char* id : {"evt_a", "evt_b"}) {
    auto r = d.Post("/hooks/open", {}, std::string(R"({"id":")") + id + R"(","type":"invoice.x"})");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  REQUIRE(Eventually([&] {
    return Show(d, "evt_a")["jobs"][0]["attempts"].size() == 1 &&
           Show(d, "evt_b")["jobs"][0]["attempts"].size() == 1;
  }));
  const std::string invoice = Show(d, "evt_a")["jobs"][0]["handler"];

  // check-config warns, with the count, before the reload does it.
  const std::string without = Config(Route("customer.*", "customer"));
  WriteFile(dir / "next.yaml", [&] {
    std::string text = without;
    for (auto at = text.find("{DB}"); at != std::string::npos; at = text.find("{DB}"))
      text.replace(at, 4, d.db());
    for (auto at = text.find("{DIR}"); at != std::string::npos; at = text.find("{DIR}"))
      text.replace(at, 5, dir.path().string());
    return text;
  }());
  auto check = hookbox::testing::RunHookbox(
      {"check-config", "--no-secrets", "-c", dir / "next.yaml"}, dir.path().string());
  CHECK(check.exit_code == 0);
  CHECK(check.out.find("2 unfinished job(s) of handler " + invoice) != std::string::npos);
  // None is held before a worker claims it: said so, not "are held (0 already)".
  CHECK(check.out.find("does not have, will be held when a worker claims them: configure") !=
        std::string::npos);
  CHECK(check.out.find("0 already") == std::string::npos);

  Reload(d, without);
  CHECK(Eventually([&] { return d.LogCount("jobs held: their handler is not configured") >= 1; }));
  MakeDue(d);
  // Claimed, then held: pending, no try spent, never run by the customer handler, not dead.
  REQUIRE(Eventually([&] {
    json j = Show(d, "evt_a")["jobs"][0];
    return j["last_error"].get<std::string>().rfind("held:", 0) == 0;
  }));
  json held = Show(d, "evt_a");
  CHECK(held["status"] != "dead");
  CHECK(held["jobs"][0]["status"] == "pending");
  CHECK(held["jobs"][0]["held"] == true);
  CHECK(held["jobs"][0]["attempts"].size() == 1);
  auto text = d.Cli({"inbox", "show", "open", "evt_a"});
  CHECK(text.out.find("held: its handler is not configured") != std::string::npos);
  auto stats = d.Cli({"stats"});
  CHECK(stats.exit_code == 0);
  CHECK(stats.out.find(invoice) != std::string::npos);
  // Said once in text (the table and what to do), on stderr only beside --json.
  CHECK(stats.out.find("held: unfinished jobs whose handler is not configured") !=
        std::string::npos);
  CHECK(stats.out.find("hookbox inbox reassign ENDPOINT HANDLER NEW") != std::string::npos);
  CHECK(stats.err.empty());
  auto stats_json = d.Cli({"stats", "--json"});
  CHECK(stats_json.exit_code == 0);
  CHECK(stats_json.err.find("2 unfinished job(s) of handler " + invoice) != std::string::npos);
  for (const std::string& line : ReadLines(dir / "ran")) CHECK(line == "invoice");

  // The handler configured again under its name: its held jobs run, with it.
  WriteFile(dir / "ok", "");
  Reload(d, Config(both));
  REQUIRE(Eventually([&] {
    return Show(d, "evt_a")["status"] == "processed" && Show(d, "evt_b")["status"] == "processed";
  }));
  for (const std::string& line : ReadLines(dir / "ran")) CHECK(line == "invoice");
  CHECK(Show(d, "evt_a")["jobs"][0]["handler"] == invoice);
}

TEST_CASE("inbox reassign gives held jobs to a configured handler; drop lets rows settle") {
  TempDir dir;
  WriteScript(dir, "invoice");
  WriteScript(dir, "billing");
  WriteFile(dir / "ok", "");
  // workers: 0 keeps the jobs waiting, unclaimed, while the config changes under them.
  Daemon d(dir, Config(Route("invoice.*", "invoice"), 0));
  for (const char* id : {"evt_1", "evt_2"}) {
    auto r = d.Post("/hooks/open", {}, std::string(R"({"id":")") + id + R"(","type":"invoice.x"})");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  const std::string invoice = Show(d, "evt_1")["jobs"][0]["handler"];
  // The script renamed: a new target, a new handler (given a name here).
  d.WriteConfig(Config(Route("invoice.*", "billing", "name: billing, ")));
  CHECK(Show(d, "evt_1")["jobs"][0]["held"] == true);

  auto to_missing = d.Cli({"inbox", "reassign", "open", invoice, "nosuch"});
  CHECK(to_missing.exit_code == 1);
  CHECK(to_missing.err.find("has no handler named nosuch") != std::string::npos);
  auto from_configured = d.Cli({"inbox", "reassign", "open", "billing", "billing"});
  CHECK(from_configured.exit_code == 1);
  CHECK(from_configured.err.find("is configured") != std::string::npos);
  auto drop_configured = d.Cli({"inbox", "drop", "open", "billing"});
  CHECK(drop_configured.exit_code == 1);

  // evt_1's job to billing; evt_2's dropped.
  RunSqlite(d.db(),
            "UPDATE jobs SET handler = 'other' WHERE inbox_id = (SELECT id FROM inbox"
            " WHERE event_id = 'evt_2')");
  auto moved = d.Cli({"inbox", "reassign", "open", invoice, "billing"});
  CHECK(moved.exit_code == 0);
  CHECK(moved.out.find("moved 1 job(s)") != std::string::npos);
  CHECK(Show(d, "evt_1")["jobs"][0]["handler"] == "billing");
  auto dropped = d.Cli({"inbox", "drop", "open", "other"});
  CHECK(dropped.exit_code == 0);
  CHECK(dropped.out.find("dropped 1 job(s)") != std::string::npos);
  json settled = Show(d, "evt_2");
  CHECK(settled["jobs"].empty());
  CHECK(settled["status"] == "processed");
}

TEST_CASE("a sync redelivery whose handler is gone holds the job and answers 500") {
  TempDir dir;
  WriteScript(dir, "invoice");
  WriteScript(dir, "customer");
  std::string config = Config(Route("invoice.*", "invoice"));
  config.replace(config.find("    routes:"), 0, "    mode: sync\n");
  Daemon d(dir, config);
  const std::string body = R"({"id":"evt_sync","type":"invoice.x"})";
  auto first = d.Post("/hooks/open", {}, body);
  REQUIRE(first);
  CHECK(first->status == 500);  // the script fails: the job is released for the redelivery
  const std::string invoice = Show(d, "evt_sync")["jobs"][0]["handler"];

  std::string without = Config(Route("customer.*", "customer"));
  without.replace(without.find("    routes:"), 0, "    mode: sync\n");
  Reload(d, without);
  auto again = d.Post("/hooks/open", {}, body);
  REQUIRE(again);
  CHECK(again->status == 500);
  CHECK(again->body.find("handler " + invoice + " is not configured; its job is held") !=
        std::string::npos);
  json held = Show(d, "evt_sync");
  CHECK(held["status"] != "dead");
  CHECK(held["jobs"][0]["status"] == "pending");
  CHECK(held["jobs"][0]["held"] == true);
  CHECK(held["jobs"][0]["attempts"].size() == 1);  // the first request's try; none for this one
  for (const std::string& line : ReadLines(dir / "ran")) CHECK(line == "invoice");
}

TEST_CASE("check-config says nothing of held jobs when the inbox cannot be opened") {
  TempDir dir;
  // A database that does not exist yet (a first install, or one this shell cannot reach):
  // the config is still checked and passes, and the check creates nothing.
  std::string text = Config(Route("*", "any"));
  const std::string db = (dir / "not-yet") + "/inbox.db";
  text.replace(text.find("{DB}"), 4, db);
  WriteFile(dir / "config.yaml", text);
  auto check = hookbox::testing::RunHookbox(
      {"check-config", "--no-secrets", "-c", dir / "config.yaml"}, dir.path().string());
  INFO(check.out << check.err);
  CHECK(check.exit_code == 0);
  CHECK(check.out.find(": ok (1 endpoint(s))") != std::string::npos);
  CHECK(check.out.find("warning") == std::string::npos);
  CHECK(check.err.empty());
  CHECK(!std::filesystem::exists(dir / "not-yet"));
}
