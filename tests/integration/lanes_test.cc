// Each handler its own lane, through the real daemon (issue 41; DESIGN.md, "Lanes"): a
// `concurrency: 1` handler stuck on a backlog does not hold up another handler's events; a
// pause or an opened circuit stops a handler's jobs at once, none of its backlog having been
// claimed to wait in memory; a kill -9 re-runs only what was running; a circuit the config
// no longer has, and one an operator resumes, stop throttling the handler. Real HTTP, real
// exec children; a handler's script appends a line per start, and the slow one waits for a
// gate file the test creates, so nothing depends on how long anything takes. (A restart
// after kill -9 re-runs what ran once the dead instance's heartbeat has expired: 2 s here.)
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <thread>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::ReadLines;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// One endpoint `orders` (id and type from the body) with two exec handlers: `slow` for
// events of type slow.* (`slow_extra` added to its exec mapping), `fast` for fast.*.
// slow.sh appends "start <id>" to {DIR}/slow.log, then waits for {DIR}/gate, then appends
// "end <id>" and exits with the status in {DIR}/status (0 when absent); fast.sh appends
// its event id to {DIR}/fast.log.
std::string Config(const std::string& slow_extra = "", const std::string& retry = "") {
  return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: "{DB}"
heartbeat_timeout: 2s
endpoints:
  - name: orders
    path: /hooks/orders
    verify: none
    event_id: body:/id
    event_type: body:/type
)" + retry +
         R"(    routes:
      - events: ["slow.*"]
        handlers:
          - name: slow
            exec: {command: [/bin/sh, "{DIR}/slow.sh"], concurrency: 1, timeout: 60s)" +
         slow_extra + R"(}
      - events: ["fast.*"]
        handlers:
          - name: fast
            exec: {command: [/bin/sh, "{DIR}/fast.sh"], concurrency: 4}
)";
}

void WriteScripts(const TempDir& dir) {
  WriteFile(dir / "slow.sh", "echo \"start $HOOKBOX_EVENT_ID\" >> " + (dir / "slow.log") +
                                 "\nwhile [ ! -f " + (dir / "gate") +
                                 " ]; do sleep 0.02; done\necho \"end $HOOKBOX_EVENT_ID\" >> " +
                                 (dir / "slow.log") + "\nexit $(cat " + (dir / "status") +
                                 " 2>/dev/null || echo 0)\n");
  WriteFile(dir / "fast.sh", "echo \"$HOOKBOX_EVENT_ID\" >> " + (dir / "fast.log") + "\n");
}

void Post(const Daemon& d, const std::string& type, const std::string& id) {
  auto r = d.Post("/hooks/orders", {}, R"({"type":")" + type + R"(","id":")" + id + R"("})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
}

// The lines of `file` in {DIR} that start with `prefix`.
size_t Count(const TempDir& dir, const std::string& file, const std::string& prefix = "") {
  auto lines = ReadLines(dir / file);
  return static_cast<size_t>(std::count_if(
      lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(prefix, 0) == 0; }));
}

json Show(const Daemon& d, const std::string& id) {
  auto r = d.Cli({"inbox", "show", "orders", id, "--json"});
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

json HandlerNamed(const Daemon& d, const std::string& name) {
  auto r = d.Cli({"handler", "list", "--json"});
  REQUIRE(r.exit_code == 0);
  for (const json& h : json::parse(r.out)) {
    if (h.value("handler", "") == name) return h;
  }
  FAIL("no handler " << name << " in handler list");
  return {};
}

}  // namespace

TEST_CASE("lanes: a stuck handler's backlog does not hold up another handler") {
  TempDir dir;
  WriteScripts(dir);
  Daemon d(dir, Config());
  for (int i = 0; i < 20; ++i) Post(d, "slow.x", "s" + std::to_string(i));
  REQUIRE(Eventually([&] { return Count(dir, "slow.log", "start") == 1; }));
  // The slow handler's one slot is taken by an attempt that waits for the gate; its other
  // 19 jobs are due. Events for the other handler run while it waits.
  for (int i = 0; i < 5; ++i) Post(d, "fast.x", "f" + std::to_string(i));
  CHECK(Eventually([&] { return Count(dir, "fast.log") == 5; }));
  CHECK(Count(dir, "slow.log", "start") == 1);  // still the one slot

  WriteFile(dir / "gate", "");
  REQUIRE(Eventually([&] { return Count(dir, "slow.log", "end") == 20; }, 60s));
  CHECK(Count(dir, "slow.log", "start") == 20);
}

TEST_CASE("lanes: a pause stops the handler's backlog at once") {
  TempDir dir;
  WriteScripts(dir);
  Daemon d(dir, Config());
  for (int i = 0; i < 10; ++i) Post(d, "slow.x", "s" + std::to_string(i));
  REQUIRE(Eventually([&] { return Count(dir, "slow.log", "start") == 1; }));
  REQUIRE(d.Cli({"handler", "pause", "orders/slow"}).exit_code == 0);
  WriteFile(dir / "gate", "");  // the running attempt ends: nothing of the handler may start
  REQUIRE(Eventually([&] { return Count(dir, "slow.log", "end") == 1; }));
  // The dispatcher has moved on past the end (another handler's event ran after it); no
  // job of the paused handler was waiting in memory to start beside it.
  Post(d, "fast.x", "f0");
  REQUIRE(Eventually([&] { return Count(dir, "fast.log") == 1; }));
  REQUIRE(Eventually([&] { return HandlerNamed(d, "slow")["running"] == 0; }));
  CHECK(Count(dir, "slow.log", "start") == 1);
  CHECK(HandlerNamed(d, "slow")["due"] == 9);
  // Nothing was claimed for it while paused: the jobs that waited hold no spent try.
  for (int i = 1; i < 10; ++i)
    CHECK(Show(d, "s" + std::to_string(i))["jobs"][0]["attempts"].empty());

  REQUIRE(d.Cli({"handler", "resume", "orders/slow"}).exit_code == 0);
  REQUIRE(Eventually([&] { return Count(dir, "slow.log", "end") == 10; }, 60s));
}

TEST_CASE("lanes: an opened circuit stops the handler's backlog at once") {
  TempDir dir;
  WriteScripts(dir);
  WriteFile(dir / "status", "1\n");
  WriteFile(dir / "gate", "");
  Daemon d(dir, Config(", circuit: {failures: 2, cooldown: 1h}", "    retry: {max_attempts: 1}\n"));
  for (int i = 0; i < 8; ++i) Post(d, "slow.x", "s" + std::to_string(i));
  REQUIRE(d.WaitForLog("circuit opened: handler held"));
  Post(d, "fast.x", "f0");
  REQUIRE(Eventually([&] { return Count(dir, "fast.log") == 1; }));
  REQUIRE(Eventually([&] { return HandlerNamed(d, "slow")["running"] == 0; }));
  // Two failed attempts opened it; none ran after.
  CHECK(Count(dir, "slow.log", "start") == 2);
  const json slow = HandlerNamed(d, "slow");
  CHECK(slow["dead"] == 2);
  CHECK(slow["due"] == 6);
}

TEST_CASE("lanes: after kill -9 only the attempts that were running run again") {
  TempDir dir;
  WriteScripts(dir);
  auto d = std::make_unique<Daemon>(dir, Config());
  for (int i = 0; i < 10; ++i) Post(*d, "slow.x", "s" + std::to_string(i));
  REQUIRE(Eventually([&] { return Count(dir, "slow.log", "start") == 1; }));
  // Another handler's work passes through the dispatcher, so it has claimed what it would.
  Post(*d, "fast.x", "f0");
  REQUIRE(Eventually([&] { return Count(dir, "fast.log") == 1; }));
  std::set<std::string> started;
  for (const std::string& l : ReadLines(dir / "slow.log")) started.insert(l.substr(6));
  REQUIRE(d->Kill(SIGKILL) == 128 + SIGKILL);

  WriteFile(dir / "gate", "");
  d->Start();
  REQUIRE(Eventually([&] { return Count(dir, "slow.log", "end") >= 10; }, 90s));
  REQUIRE(Eventually(
      [&] {
        const json h = HandlerNamed(*d, "slow");
        return h["pending"] == 0 && h["due"] == 0 && h["running"] == 0;
      },
      90s));
  // A job has a second attempt only if it had started before the kill.
  for (int i = 0; i < 10; ++i) {
    const std::string id = "s" + std::to_string(i);
    const json job = Show(*d, id)["jobs"][0];
    CHECK(job["status"] == "done");
    if (!started.count(id)) {
      INFO(id << " had not started before the kill");
      CHECK(job["attempts"].size() == 1);
    }
  }
}

TEST_CASE("lanes: a circuit removed by a reload, or resumed, stops throttling") {
  TempDir dir;
  WriteScripts(dir);
  WriteFile(dir / "status", "1\n");
  WriteFile(dir / "gate", "");
  Daemon d(dir, Config(", circuit: {failures: 2, cooldown: 1h}", "    retry: {max_attempts: 1}\n"));
  for (int i = 0; i < 4; ++i) Post(d, "slow.x", "s" + std::to_string(i));
  REQUIRE(d.WaitForLog("circuit opened: handler held"));
  REQUIRE(Eventually([&] { return HandlerNamed(d, "slow")["running"] == 0; }));
  CHECK(HandlerNamed(d, "slow")["circuit"] == "open");

  // The operator's resume closes it: the two jobs left run (and fail) at once, and open it
  // again, which only a closed circuit can (its cooldown is an hour). (Not read back between:
  // the two failures may already have re-opened it by then.)
  REQUIRE(d.Cli({"handler", "resume", "orders/slow"}).exit_code == 0);
  REQUIRE(d.WaitForLog("circuit opened: handler held", 2));
  REQUIRE(Eventually([&] { return HandlerNamed(d, "slow")["running"] == 0; }));

  // A reload without `circuit:` closes it: the handler runs its backlog unthrottled.
  WriteFile(dir / "status", "0\n");
  d.WriteConfig(Config("", "    retry: {max_attempts: 1}\n"));
  d.Signal(SIGHUP);
  REQUIRE(d.WaitForLog("reloaded"));
  for (int i = 4; i < 8; ++i) Post(d, "slow.x", "s" + std::to_string(i));
  REQUIRE(Eventually([&] { return Count(dir, "slow.log", "end") == 8; }, 60s));
  CHECK(HandlerNamed(d, "slow")["circuit"] == "closed");
  // And a restart keeps it closed.
  REQUIRE(d.Kill(SIGTERM) == 0);
  d.Start();
  CHECK(HandlerNamed(d, "slow")["circuit"] == "closed");
}
