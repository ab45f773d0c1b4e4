// The daemon's metric families (ops/daemon_metrics.h): a new DaemonMetrics renders every
// family with its type, and the series that need no config at 0 from the start; the two
// timestamp gauges read their atomics at each render; the histograms use LatencyBuckets; and
// StartSeries creates at 0 each series the config's endpoints and handlers can have (signature
// failures only for an endpoint that verifies), keeps what was counted, and keeps the series
// of an endpoint a reload removed. The real daemon's /metrics is
// tests/integration/metrics_test.cc.
#include "ops/daemon_metrics.h"

#include <catch2/catch.hpp>
#include <string>

#include "tests/ops/prometheus_text.h"

using namespace hookbox;
using hookbox::testing::Exposition;
using hookbox::testing::ParsePrometheusText;

namespace {

// The registry's text, parsed; it must parse cleanly.
Exposition RenderedMetrics(const MetricsRegistry& registry) {
  const std::string text = registry.Render();
  Exposition e = ParsePrometheusText(text);
  INFO(text);
  REQUIRE(e.errors.empty());
  return e;
}

}  // namespace

TEST_CASE("DaemonMetrics: every family with its type; config-free series at 0 from the start",
          "[daemon_metrics]") {
  DaemonMetrics m;
  const Exposition e = RenderedMetrics(m.registry);
  for (const char* counter :
       {"hookbox_deliveries_total", "hookbox_signature_failures_total", "hookbox_attempts_total",
        "hookbox_handler_infra_failures_total", "hookbox_handler_circuit_transitions_total",
        "hookbox_purged_rows_total", "hookbox_bulk_jobs_rearmed_total",
        "hookbox_storage_errors_total", "hookbox_config_reloads_refused_total",
        "hookbox_spans_exported_total", "hookbox_spans_dropped_total"}) {
    INFO(counter);
    CHECK(e.types.at(counter) == "counter");
  }
  for (const char* histogram : {"hookbox_accept_latency_seconds", "hookbox_handler_latency_seconds",
                                "hookbox_handler_rate_wait_seconds"}) {
    INFO(histogram);
    CHECK(e.types.at(histogram) == "histogram");
  }
  CHECK(e.types.at("hookbox_purge_last_success_timestamp_seconds") == "gauge");
  CHECK(e.types.at("hookbox_config_last_reload_success_timestamp_seconds") == "gauge");

  for (const char* op : {"accept", "checkpoint", "purge", "claim", "finish", "heartbeat"}) {
    CHECK(e.Get("hookbox_storage_errors_total{op=\"" + std::string(op) + "\"}") == 0);
  }
  for (const char* kind : {"processed", "stale", "ignored", "dead", "sequences"}) {
    CHECK(e.Get("hookbox_purged_rows_total{kind=\"" + std::string(kind) + "\"}") == 0);
  }
  CHECK(e.Get(R"(hookbox_bulk_jobs_rearmed_total{verb="retry"})") == 0);
  CHECK(e.Get(R"(hookbox_bulk_jobs_rearmed_total{verb="replay"})") == 0);
  CHECK(e.Get("hookbox_config_reloads_refused_total") == 0);
  CHECK(e.Get("hookbox_spans_exported_total") == 0);
  CHECK(e.Get(R"(hookbox_spans_dropped_total{reason="queue_full"})") == 0);
  CHECK(e.Get(R"(hookbox_spans_dropped_total{reason="export_failed"})") == 0);
  CHECK(e.Get("hookbox_purge_last_success_timestamp_seconds") == 0);
  CHECK(e.Get("hookbox_config_last_reload_success_timestamp_seconds") == 0);
  // What depends on the config waits for StartSeries.
  CHECK(e.Sum("hookbox_deliveries_total") == 0);
  CHECK_FALSE(e.Get(R"(hookbox_deliveries_total{endpoint="",outcome="not_found"})"));
}

TEST_CASE("DaemonMetrics: the timestamps at each render; what is recorded, under its labels",
          "[daemon_metrics]") {
  DaemonMetrics m;
  m.last_purge = 1'700'000'000.5;
  m.last_reload = 1'700'000'100;
  m.attempts.With({"ep", "h", "ok"}).Inc(2);
  m.accept_latency.With({"ep"}).Observe(0.0015);
  const Exposition e = RenderedMetrics(m.registry);
  CHECK(e.Get("hookbox_purge_last_success_timestamp_seconds") == 1'700'000'000.5);
  CHECK(e.Get("hookbox_config_last_reload_success_timestamp_seconds") == 1'700'000'100);
  CHECK(e.Get(R"(hookbox_attempts_total{endpoint="ep",handler="h",outcome="ok"})") == 2);
  CHECK(e.Get(R"(hookbox_accept_latency_seconds_count{endpoint="ep"})") == 1);
  CHECK(e.Get(R"(hookbox_accept_latency_seconds_bucket{endpoint="ep",le="0.001"})") == 0);
  CHECK(e.Get(R"(hookbox_accept_latency_seconds_bucket{endpoint="ep",le="+Inf"})") == 1);
  size_t buckets = 0;
  for (const auto& [key, value] : e.samples) {
    buckets += key.starts_with("hookbox_accept_latency_seconds_bucket{") ? 1 : 0;
  }
  CHECK(buckets == LatencyBuckets().size() + 1);
  // Two registries are two sets of counts.
  CHECK(RenderedMetrics(DaemonMetrics().registry).Sum("hookbox_attempts_total") == 0);
}

TEST_CASE("StartSeries: each series of the config's endpoints and handlers, at 0",
          "[daemon_metrics]") {
  StartSeries({.endpoints = {{"dm-signed", true}, {"dm-open", false}},
               .handlers = {{"dm-signed", "dm-files"}}});
  Exposition e = RenderedMetrics(Metrics().registry);
  for (const char* endpoint : {"dm-signed", "dm-open"}) {
    for (const char* outcome : kDeliveryOutcomes) {
      INFO(endpoint << " " << outcome);
      CHECK(e.Get("hookbox_deliveries_total{endpoint=\"" + std::string(endpoint) + "\",outcome=\"" +
                  outcome + "\"}") == 0);
    }
  }
  CHECK(e.Get(R"(hookbox_deliveries_total{endpoint="",outcome="not_found"})").has_value());
  for (const char* reason : {"missing", "malformed", "mismatch", "timestamp"}) {
    const std::string labels = "{endpoint=\"%\",reason=\"" + std::string(reason) + "\"}";
    auto series = [&](const std::string& endpoint) {
      std::string key = "hookbox_signature_failures_total" + labels;
      return e.Get(key.replace(key.find('%'), 1, endpoint));
    };
    CHECK(series("dm-signed") == 0);
    CHECK_FALSE(series("dm-open"));  // verifies nothing: no signature to fail
  }
  const std::string handler = R"(endpoint="dm-signed",handler="dm-files")";
  for (const char* outcome : {"ok", "failed", "timeout", "permanent"}) {
    CHECK(e.Get("hookbox_attempts_total{" + handler + ",outcome=\"" + outcome + "\"}") == 0);
  }
  CHECK(e.Get("hookbox_handler_infra_failures_total{" + handler + "}") == 0);
  for (const char* to : {"open", "half-open", "closed"}) {
    CHECK(e.Get("hookbox_handler_circuit_transitions_total{" + handler + ",to=\"" + to + "\"}") ==
          0);
  }
  CHECK_FALSE(
      e.Get(R"(hookbox_attempts_total{endpoint="dm-open",handler="dm-files",outcome="ok"})"));

  // A reload: what was counted stays, and so do the series of an endpoint it removed.
  Metrics().deliveries.With({"dm-signed", "accepted"}).Inc(3);
  StartSeries({.endpoints = {{"dm-signed", true}}, .handlers = {}});
  e = RenderedMetrics(Metrics().registry);
  CHECK(e.Get(R"(hookbox_deliveries_total{endpoint="dm-signed",outcome="accepted"})") == 3);
  CHECK(e.Get(R"(hookbox_deliveries_total{endpoint="dm-open",outcome="accepted"})") == 0);
  CHECK(e.Get(R"(hookbox_attempts_total{endpoint="dm-signed",handler="dm-files",outcome="ok"})") ==
        0);
}
