// `alerts:` as the loader reads them (config/config.cc): each alert's keys, its target as a
// handler of the internal endpoint hookbox.alerts (routed by condition, named as the alert,
// `http: {secret}` read as the http kind's sign.secret), and each bad input as one
// positioned error.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "load_helpers.h"

using namespace hookbox;
using testing::Dump;
using testing::HasLine;
using testing::Load;

namespace {

constexpr const char* kKey = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

LoadResult WithAlerts(const std::string& alerts) {
  return Load(R"(
endpoints:
  - name: shop
    path: /shop
    verify: none
alerts:
)" + alerts);
}

}  // namespace

TEST_CASE("alerts: each alert's target is a handler of hookbox.alerts, routed by condition",
          "[config]") {
  auto r = WithAlerts(std::string(R"(
  - name: ops
    on: [job_dead, circuit_open, job_dead]
    repeat: 1h
    http: {url: "https://ops.internal/alerts", secret: {value: ")") +
                      kKey + R"("}}
  - name: pager
    on: [handler_held, backlog, storage_unavailable]
    backlog_age: 90s
    exec: {command: [/bin/true]}
)");
  INFO(Dump(r));
  REQUIRE(r.config);
  const Config& c = *r.config;
  REQUIRE(c.alerts.size() == 2);
  CHECK(c.alerts[0].name == "ops");
  CHECK(c.alerts[0].on ==
        std::vector<AlertCondition>{AlertCondition::kJobDead, AlertCondition::kCircuitOpen});
  CHECK(c.alerts[0].repeat == std::chrono::hours(1));
  CHECK(c.alerts[1].repeat == std::chrono::minutes(15));
  CHECK(c.alerts[0].backlog_age == std::chrono::minutes(10));
  CHECK(c.alerts[1].backlog_age == std::chrono::seconds(90));
  CHECK(c.alerts[1].on == std::vector<AlertCondition>{AlertCondition::kHandlerHeld,
                                                      AlertCondition::kBacklog,
                                                      AlertCondition::kStorageUnavailable});
  // The configured endpoint first, then hookbox's own, with no path.
  REQUIRE(c.endpoints.size() == 2);
  const Endpoint& alerts = c.endpoints[1];
  CHECK(alerts.name == kAlertsEndpoint);
  CHECK(alerts.path.empty());
  CHECK(c.FindByPath("") == nullptr);
  REQUIRE(alerts.routes.size() == 2);
  CHECK(alerts.routes[0].events == std::vector<std::string>{"job_dead", "circuit_open"});
  REQUIRE(alerts.routes[0].handlers.size() == 1);
  CHECK(alerts.routes[0].handlers[0].name == "ops");
  CHECK(alerts.routes[0].handlers[0].kind == "http");
  CHECK(alerts.routes[0].handlers[0].settings != nullptr);
  CHECK(alerts.routes[1].events ==
        std::vector<std::string>{"handler_held", "backlog", "storage_unavailable"});
  CHECK(alerts.routes[1].handlers[0].kind == "exec");
}

TEST_CASE("alerts: no alerts, no hookbox.alerts endpoint", "[config]") {
  auto r = Load(R"(
endpoints:
  - name: shop
    path: /shop
    verify: none
)");
  REQUIRE(r.config);
  CHECK(r.config->endpoints.size() == 1);
  CHECK(r.config->alerts.empty());
}

TEST_CASE("alerts: bad alerts are errors at their line", "[config]") {
  auto r = WithAlerts(R"(
  - name: ops
    on: [job_dead, nope]
    http: {url: "https://ops.internal/alerts"}
  - name: file
    on: [job_dead]
    file: {dir: /tmp}
  - on: [job_dead]
    exec: {command: [/bin/true]}
  - name: ops
    on: [circuit_open]
    exec: {command: [/bin/true]}
  - name: later
    on: [storage_unavailable]
    backlog_age: 5m
    exec: {command: [/bin/true]}
  - name: nowhere
    on: [job_dead]
  - name: twice
    on: [job_dead]
    http: {url: "https://x.internal/", secret: {value: "k"}, sign: {secret: {value: "k"}}}
)");
  INFO(Dump(r));
  CHECK_FALSE(r.config);
  CHECK(HasLine(r.errors, "test.yaml:9:20: alerts[0].on[1]: \"nope\" is not one of job_dead"));
  CHECK(HasLine(r.errors, "alerts[1].file: an alert is sent by http or exec"));
  CHECK(HasLine(r.errors, "alerts[2]: name is required"));
  CHECK(HasLine(r.errors, "alerts[3].name: \"ops\" is already used by alerts[0]"));
  CHECK(HasLine(r.errors, "alerts[4].backlog_age: only the backlog condition reads it"));
  CHECK(HasLine(r.errors, "alerts[5]: expected one of"));
  CHECK(HasLine(r.errors, "alerts[6].http.secret: give the key once"));
}

TEST_CASE("alerts: no configured endpoint may be named hookbox.alerts", "[config]") {
  auto r = Load(R"(
endpoints:
  - name: hookbox.alerts
    path: /a
    verify: none
)");
  CHECK_FALSE(r.config);
  CHECK(HasLine(r.errors, "endpoints[0].name: \"hookbox.alerts\" is hookbox's own"));
}
