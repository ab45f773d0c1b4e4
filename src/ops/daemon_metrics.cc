// The daemon's metric families (see daemon_metrics.h).
#include "ops/daemon_metrics.h"

namespace hookbox {

namespace {

// The series that do not depend on the config, present at 0 from the start so that an alert
// on their rate has a series to read, and the two timestamp gauges.
void StartFixedSeries(DaemonMetrics& m) {
  for (const char* op : {"accept", "checkpoint", "purge", "claim", "finish", "heartbeat"}) {
    m.storage_errors.With({op});
  }
  for (const char* kind : {"processed", "stale", "ignored", "dead", "sequences"}) {
    m.purged_rows.With({kind});
  }
  for (const char* verb : {"retry", "replay"}) m.bulk_jobs_rearmed.With({verb});
  m.reloads_refused.With({});
  m.spans_exported.With({});
  for (const char* reason : {"queue_full", "export_failed"}) m.spans_dropped.With({reason});
  auto timestamp = [](const std::atomic<double>& t) {
    return [&t] { return std::vector<GaugeSample>{{{}, t.load(std::memory_order_relaxed)}}; };
  };
  m.registry.AddGauge("hookbox_purge_last_success_timestamp_seconds",
                      "Unix time the last purge completed; 0 if none has since the start.", {},
                      timestamp(m.last_purge));
  m.registry.AddGauge("hookbox_config_last_reload_success_timestamp_seconds",
                      "Unix time the config in use was loaded: the start, or the last reload.", {},
                      timestamp(m.last_reload));
}

}  // namespace

DaemonMetrics::DaemonMetrics()
    : deliveries(registry.AddCounter("hookbox_deliveries_total",
                                     "Deliveries answered, by endpoint and outcome.",
                                     {"endpoint", "outcome"})),
      signature_failures(registry.AddCounter("hookbox_signature_failures_total",
                                             "Deliveries refused with 401, by endpoint and reason.",
                                             {"endpoint", "reason"})),
      accept_latency(registry.AddHistogram(
          "hookbox_accept_latency_seconds",
          "From a request reaching the pipeline to its inbox transaction committing.", {"endpoint"},
          LatencyBuckets())),
      attempts(registry.AddCounter("hookbox_attempts_total",
                                   "Handler attempts, by endpoint, handler and outcome.",
                                   {"endpoint", "handler", "outcome"})),
      handler_latency(registry.AddHistogram(
          "hookbox_handler_latency_seconds",
          "How long one handler attempt took, by endpoint, handler and outcome.",
          {"endpoint", "handler", "outcome"}, LatencyBuckets())),
      handler_infra_failures(registry.AddCounter(
          "hookbox_handler_infra_failures_total",
          "Handler attempts that could not start for want of file descriptors or processes, "
          "retried without spending the job's attempt budget, by endpoint and handler.",
          {"endpoint", "handler"})),
      circuit_transitions(registry.AddCounter(
          "hookbox_handler_circuit_transitions_total",
          "Circuit breaker transitions, by endpoint, handler and the state entered.",
          {"endpoint", "handler", "to"})),
      rate_wait(registry.AddHistogram(
          "hookbox_handler_rate_wait_seconds",
          "For handlers with a rate limit: from a job's due time to its claim, by endpoint and "
          "handler.",
          {"endpoint", "handler"}, LatencyBuckets())),
      purged_rows(registry.AddCounter("hookbox_purged_rows_total",
                                      "Rows removed by the daily purge, by kind.", {"kind"})),
      bulk_jobs_rearmed(registry.AddCounter(
          "hookbox_bulk_jobs_rearmed_total",
          "Jobs re-armed by the console's bulk retry and replay, by verb (the CLI's are not "
          "counted: they run in a process of their own).",
          {"verb"})),
      storage_errors(registry.AddCounter(
          "hookbox_storage_errors_total",
          "Storage operations that failed other than by lock contention, by operation (accept, "
          "checkpoint, purge, claim, finish); each is also an error log line.",
          {"op"})),
      reloads_refused(registry.AddCounter(
          "hookbox_config_reloads_refused_total",
          "Reloads (SIGHUP) refused because the new config had errors; the old config stays.", {})),
      spans_exported(registry.AddCounter("hookbox_spans_exported_total",
                                         "Spans the OTLP collector (tracing.otlp) took.", {})),
      spans_dropped(registry.AddCounter(
          "hookbox_spans_dropped_total",
          "Spans not exported, by reason: queue_full (more waiting than the queue holds), "
          "export_failed (the collector was down, slow or refused the batch).",
          {"reason"})) {
  StartFixedSeries(*this);
}

void StartSeries(const KnownSeries& known) {
  DaemonMetrics& m = Metrics();
  for (const auto& [endpoint, verified] : known.endpoints) {
    for (const char* outcome : kDeliveryOutcomes) m.deliveries.With({endpoint, outcome});
    if (!verified) continue;
    for (const char* reason : {"missing", "malformed", "mismatch", "timestamp"}) {
      m.signature_failures.With({endpoint, reason});
    }
  }
  m.deliveries.With({"", "not_found"});
  for (const auto& [endpoint, handler] : known.handlers) {
    for (const char* outcome : {"ok", "failed", "timeout", "permanent"}) {
      m.attempts.With({endpoint, handler, outcome});
    }
    m.handler_infra_failures.With({endpoint, handler});
    for (const char* to : {"open", "half-open", "closed"}) {
      m.circuit_transitions.With({endpoint, handler, to});
    }
  }
}

DaemonMetrics& Metrics() {
  static DaemonMetrics* metrics = new DaemonMetrics();  // never destroyed: threads may outlive main
  return *metrics;
}

}  // namespace hookbox
