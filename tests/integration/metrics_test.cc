// /metrics as an alert reads it (README, "Metrics"): every counter series the config can
// have is there at 0 from the first scrape; hookbox_jobs by endpoint and handler; the
// version; when the config was last loaded and how many reloads were refused. The real
// daemon, scraped over HTTP.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "tests/integration/daemon.h"
#include "tests/ops/prometheus_text.h"

using namespace hookbox::testing;

namespace {

// "gh" verifies GitHub signatures and files its events; "open" verifies nothing and runs
// a handler that fails, so its jobs die at the first failure. `extra` adds endpoints.
std::string Config(const std::string& extra = "") {
  return R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: {DB}
workers: 1
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{value: s3cret}]
    routes:
      - events: ["*"]
        handlers: [{name: files, file: {dir: "{DIR}/out"}}]
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    retry: {max_attempts: 1}
    routes:
      - events: ["*"]
        handlers: [{name: fails, exec: {command: [/bin/false]}}]
)" + extra;
}

Exposition Scrape(const Daemon& d) {
  httplib::Client admin("127.0.0.1", d.admin_port());
  auto r = admin.Get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  Exposition m = ParsePrometheusText(r->body);
  INFO(r->body);
  REQUIRE(m.errors.empty());
  return m;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TEST_CASE("metrics: every series an alert needs is at 0 before anything happened") {
  TempDir dir;
  Daemon d(dir, Config());
  const Exposition m = Scrape(d);
  for (const char* endpoint : {"gh", "open"}) {
    for (const char* outcome : {"accepted", "duplicate", "unauthenticated", "storage_error"}) {
      INFO(endpoint << " " << outcome);
      CHECK(m.Get(std::string("hookbox_deliveries_total{endpoint=\"") + endpoint + "\",outcome=\"" +
                  outcome + "\"}") == 0);
    }
  }
  CHECK(m.Get(R"(hookbox_deliveries_total{endpoint="",outcome="not_found"})") == 0);
  // Signature failures for the endpoint that verifies; none for the one that does not.
  CHECK(m.Get(R"(hookbox_signature_failures_total{endpoint="gh",reason="mismatch"})") == 0);
  CHECK(m.Get(R"(hookbox_signature_failures_total{endpoint="gh",reason="timestamp"})") == 0);
  CHECK_FALSE(m.Get(R"(hookbox_signature_failures_total{endpoint="open",reason="mismatch"})"));
  CHECK(m.Get(R"(hookbox_attempts_total{endpoint="open",handler="fails",outcome="failed"})") == 0);
  CHECK(m.Get(R"(hookbox_attempts_total{endpoint="gh",handler="files",outcome="ok"})") == 0);
  CHECK(m.Get(R"(hookbox_handler_infra_failures_total{endpoint="gh",handler="files"})") == 0);
  CHECK(m.Get(R"(hookbox_handler_circuit_transitions_total{endpoint="gh",handler="files",)"
              R"(to="open"})") == 0);
  CHECK(m.Get(R"(hookbox_purged_rows_total{kind="dead"})") == 0);
  CHECK(m.Get(R"(hookbox_bulk_jobs_rearmed_total{verb="retry"})") == 0);
  CHECK(m.Get(R"(hookbox_storage_errors_total{op="accept"})") == 0);
  CHECK(m.Get("hookbox_config_reloads_refused_total") == 0);
  // Each configured handler's queue, at 0.
  for (const char* status : {"pending", "processing", "dead"}) {
    INFO(status);
    CHECK(m.Get(std::string(R"(hookbox_jobs{endpoint="open",handler="fails",status=")") + status +
                "\"}") == 0);
    CHECK(m.Get(std::string(R"(hookbox_jobs{endpoint="gh",handler="files",status=")") + status +
                "\"}") == 0);
  }
  CHECK(m.Get("hookbox_jobs_done") == 0);
  CHECK(m.Get("hookbox_purge_last_success_timestamp_seconds") == 0);  // none since the start
  const auto loaded = m.Get("hookbox_config_last_reload_success_timestamp_seconds");
  REQUIRE(loaded);
  CHECK(*loaded > Now() - 60);
  CHECK(*loaded <= Now());
  CHECK(m.types.at("hookbox_config_reloads_refused_total") == "counter");
  CHECK(m.types.at("hookbox_jobs") == "gauge");
}

TEST_CASE("metrics: the version, in hookbox_build_info and the listening line") {
  TempDir dir;
  Daemon d(dir, Config());
  CliResult v = RunHookbox({"--version"}, dir.path().string());
  REQUIRE(v.exit_code == 0);
  REQUIRE(v.out.rfind("hookbox ", 0) == 0);
  const std::string version = v.out.substr(8, v.out.find_last_not_of('\n') - 7);
  REQUIRE_FALSE(version.empty());
  CHECK(Scrape(d).Get("hookbox_build_info{version=\"" + version + "\"}") == 1);
  bool found = false;
  std::istringstream lines(d.Log());
  for (std::string line; std::getline(lines, line);) {
    auto j = ParseLogLine(line);
    if (j.is_object() && j.value("msg", "") == "listening") {
      found = true;
      CHECK(j.value("version", "") == version);
    }
  }
  CHECK(found);
}

TEST_CASE("metrics: a dead job shows under its endpoint and handler") {
  TempDir dir;
  Daemon d(dir, Config());
  auto r = d.Post("/hooks/open", {}, R"({"id":"evt_1"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  REQUIRE(Eventually([&] {
    return Scrape(d).Get(R"(hookbox_jobs{endpoint="open",handler="fails",status="dead"})") == 1;
  }));
  const Exposition m = Scrape(d);
  CHECK(m.Get(R"(hookbox_jobs{endpoint="gh",handler="files",status="dead"})") == 0);
  CHECK(m.Get(R"(hookbox_deliveries_total{endpoint="open",outcome="accepted"})") == 1);
  CHECK(Eventually([&] {
    return Scrape(d).Get(
               R"(hookbox_attempts_total{endpoint="open",handler="fails",outcome="failed"})") == 1;
  }));
}

TEST_CASE("metrics: a refused reload is counted; a good one restamps and adds its series") {
  TempDir dir;
  Daemon d(dir, Config());
  const double first = *Scrape(d).Get("hookbox_config_last_reload_success_timestamp_seconds");

  d.WriteConfig(Config() + "  - {name: broken, path: /hooks/broken, provider: nosuch}\n");
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] { return Scrape(d).Get("hookbox_config_reloads_refused_total") == 1; }));
  CHECK(*Scrape(d).Get("hookbox_config_last_reload_success_timestamp_seconds") == first);

  const int reloads = d.LogCount("reloaded");
  d.WriteConfig(Config(R"(  - name: later
    path: /hooks/later
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers: [{name: more, file: {dir: "{DIR}/later"}}]
)"));
  d.Signal(SIGHUP);
  REQUIRE(Eventually([&] { return d.LogCount("reloaded") > reloads; }));
  const Exposition m = Scrape(d);
  CHECK(*m.Get("hookbox_config_last_reload_success_timestamp_seconds") >= first);
  CHECK(m.Get("hookbox_config_reloads_refused_total") == 1);
  CHECK(m.Get(R"(hookbox_deliveries_total{endpoint="later",outcome="accepted"})") == 0);
  CHECK(m.Get(R"(hookbox_attempts_total{endpoint="later",handler="more",outcome="ok"})") == 0);
  CHECK(m.Get(R"(hookbox_jobs{endpoint="later",handler="more",status="pending"})") == 0);
}
