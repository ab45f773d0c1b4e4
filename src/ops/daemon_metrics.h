// The daemon's own metrics: one process-wide registry (what the admin listener's /metrics
// shows) and the families the pipeline records into. Label values are bounded: endpoint and
// handler names come from the config, outcomes and reasons from fixed lists. Scrape-time
// gauges that need the inbox (jobs by status, oldest unfinished job) are added by `serve`,
// which owns the inbox.
#pragma once

#include "ops/metrics.h"
#include "ops/recent_counts.h"

namespace hookbox {

struct DaemonMetrics {
  MetricsRegistry registry;
  // {endpoint, outcome}: outcome is the delivery log line's (accepted, duplicate, stale,
  // ignored, unauthenticated, not_found, storage_error, ...); endpoint "" when no endpoint
  // has the path.
  CounterFamily& deliveries;
  // {endpoint, reason}: missing, malformed, mismatch, timestamp.
  CounterFamily& signature_failures;
  // {endpoint}: from the request reaching the pipeline to the inbox commit returning.
  HistogramFamily& accept_latency;
  // {endpoint, handler, outcome}: one per attempt, pool or sync.
  CounterFamily& attempts;
  HistogramFamily& handler_latency;
  // {endpoint, handler}: attempts whose handler could not be started for want of the
  // daemon's own descriptors or processes (EMFILE, ENFILE, EAGAIN); retried without
  // spending the job's attempt budget. Also counted in `attempts` as failed.
  CounterFamily& handler_infra_failures;
  // {endpoint, handler, to}: circuit breaker transitions (to: open, half-open, closed).
  CounterFamily& circuit_transitions;
  // {endpoint, handler}: for handlers with a `rate:`, how long each claimed job waited
  // past its due time (the time it spent held back by the limit, and by any backlog).
  HistogramFamily& rate_wait;
  // {kind}: processed, stale, ignored, dead, sequences.
  CounterFamily& purged_rows;
  // {verb}: retry, replay. Jobs the console's bulk page re-armed (the CLI's bulk verbs run in
  // a process of their own: they print what they did, and are not counted here).
  CounterFamily& bulk_jobs_rearmed;
  // {op}: accept, checkpoint, purge, claim, finish. Storage operations that failed for a
  // reason other than lock contention (storage_health.h); each is also an `error` log line.
  CounterFamily& storage_errors;
  // Deliveries of the last hour by the outcome `deliveries` counts them under (the
  // console's summary).
  RecentCounts recent_deliveries;

  DaemonMetrics();
};

DaemonMetrics& Metrics();

}  // namespace hookbox
