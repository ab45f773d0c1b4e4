// The state of a renamed or removed handler (README, "Renaming a handler"), through the real
// daemon and CLI: after a reload without the handler, `handler resume` and `handler forget`
// clear its stored pause, so `handler list` and hookbox_handler_paused (read from the state
// rows at each scrape) forget it; `inbox reassign` gives the new name the old one's pause
// before moving the jobs, so they do not run against the downstream the pause was for.
// On SQLite, and on PostgreSQL ([.postgres]).
#include <catch2/catch.hpp>
#include <csignal>
#include <string>

#include "daemon.h"
#include "tests/pg/pg_testing.h"

using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

// Endpoint `stripe`: every event to `billing` (a rename of it later: `crm`); `audit.*`
// events, never sent here, to `audit` (removed later).
std::string Config(const std::string& billing, bool audit) {
  return std::string(R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: "{DB}"
workers: 1
endpoints:
  - name: stripe
    path: /hooks/stripe
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - name: )") +
         billing + R"(
            exec: {command: [/bin/sh, -c, 'echo ran >> {DIR}/ran']}
)" +
         (audit ? R"(      - events: ["audit.*"]
        handlers:
          - name: audit
            exec: {command: [/bin/true]}
)"
                : "");
}

void Reload(Daemon& d, const std::string& config) {
  const int before = d.LogCount("reloaded");
  d.WriteConfig(config);
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] { return d.LogCount("reloaded") > before; }));
}

std::string Metrics(const Daemon& d) {
  httplib::Client admin("127.0.0.1", d.admin_port());
  auto r = admin.Get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

bool HasSeries(const std::string& metrics, const std::string& handler) {
  return metrics.find("hookbox_handler_paused{endpoint=\"stripe\",handler=\"" + handler + "\"}") !=
         std::string::npos;
}

json HandlerLine(const Daemon& d, const std::string& handler) {
  auto r = d.Cli({"handler", "list", "--json"});
  REQUIRE(r.exit_code == 0);
  for (const json& line : json::parse(r.out)) {
    if (line["endpoint"] == "stripe" && line["handler"] == handler) return line;
  }
  return nullptr;
}

void ForgetAndCarry(const std::string& db) {
  TempDir dir;
  Daemon d(dir, Config("billing", true), db);
  for (const char* h : {"stripe/billing", "stripe/audit"}) {
    auto paused = d.Cli({"handler", "pause", h, "--reason", "crm down"});
    REQUIRE(paused.exit_code == 0);
  }
  auto r = d.Post("/hooks/stripe", {}, R"({"id":"e1","type":"t"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);

  // The rename (billing -> crm) and audit's removal: both states stay, shown and exported.
  Reload(d, Config("crm", false));
  CHECK(HandlerLine(d, "audit")["state"] == "not-configured");
  CHECK(HasSeries(Metrics(d), "audit"));
  CHECK(HasSeries(Metrics(d), "billing"));

  // Resume of the name `handler list` shows: the state goes, from the list and /metrics.
  auto resumed = d.Cli({"handler", "resume", "stripe/audit"});
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.out.find("forgot the state of stripe/audit") != std::string::npos);
  CHECK(HandlerLine(d, "audit").is_null());
  CHECK_FALSE(HasSeries(Metrics(d), "audit"));
  // Forgotten, with no jobs: the name is no handler's any more.
  auto again = d.Cli({"handler", "forget", "stripe/audit"});
  CHECK(again.exit_code == 1);
  CHECK(again.err.find("has no handler named audit") != std::string::npos);
  auto configured = d.Cli({"handler", "forget", "stripe/crm"});
  CHECK(configured.exit_code == 1);
  CHECK(configured.err.find("is configured") != std::string::npos);

  // Reassign: crm is paused with billing's reason before the job moves; billing's state goes.
  auto moved = d.Cli({"inbox", "reassign", "stripe", "billing", "crm"});
  REQUIRE(moved.exit_code == 0);
  CHECK(moved.out.find("paused stripe/crm, as billing was (crm down)") != std::string::npos);
  CHECK(moved.out.find("moved 1 job(s)") != std::string::npos);
  const json crm = HandlerLine(d, "crm");
  CHECK(crm["state"] == "paused");
  CHECK(crm["reason"] == "crm down");
  CHECK(crm["pending"].get<int>() + crm["due"].get<int>() == 1);
  CHECK(HandlerLine(d, "billing").is_null());
  CHECK_FALSE(HasSeries(Metrics(d), "billing"));

  // Resumed, the job runs under its new name, once.
  REQUIRE(d.Cli({"handler", "resume", "stripe/crm"}).exit_code == 0);
  REQUIRE(Eventually([&] {
    auto shown = d.Cli({"inbox", "show", "stripe", "e1", "--json"});
    return shown.exit_code == 0 && json::parse(shown.out)["jobs"][0]["status"] == "done";
  }));
  CHECK(hookbox::testing::ReadLines(dir / "ran").size() == 1);
}

}  // namespace

TEST_CASE("handler resume/forget clear a gone handler's state; reassign carries the pause") {
  ForgetAndCarry("");
}

TEST_CASE("handler forget and reassign's pause on PostgreSQL", "[.postgres]") {
  hookbox::pgtest::TestDatabase db;
  ForgetAndCarry(db.url());
}
