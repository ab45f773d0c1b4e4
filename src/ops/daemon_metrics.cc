// The daemon's metric families (see daemon_metrics.h).
#include "ops/daemon_metrics.h"

namespace hookbox {

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
          {"op"})) {
  // Present at 0 from the start, so that an alert on its rate has a series to read.
  for (const char* op : {"accept", "checkpoint", "purge", "claim", "finish"}) {
    storage_errors.With({op});
  }
}

DaemonMetrics& Metrics() {
  static DaemonMetrics* metrics = new DaemonMetrics();  // never destroyed: threads may outlive main
  return *metrics;
}

}  // namespace hookbox
