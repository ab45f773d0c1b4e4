// The daemon's own metrics: one process-wide registry (what the admin listener's /metrics
// shows) and the families the pipeline records into. Label values are bounded: endpoint and
// handler names come from the config, outcomes and reasons from fixed lists. Scrape-time
// gauges that need the inbox (jobs by status, oldest unfinished job) are added by `serve`,
// which owns the inbox.
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

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
  // {op}: accept, checkpoint, purge, claim, finish, heartbeat. Storage operations that failed for a
  // reason other than lock contention (storage_health.h); each is also an `error` log line.
  CounterFamily& storage_errors;
  // Reloads (SIGHUP) refused because the new config had errors; the old one stays.
  CounterFamily& reloads_refused;
  // `tracing.otlp` (ops/spans.h): spans the collector took, and {reason}: queue_full,
  // export_failed, spans dropped.
  CounterFamily& spans_exported;
  CounterFamily& spans_dropped;
  // Unix times, 0 until it first happens in this process: the last purge that completed
  // (daily, or `hookbox purge`), and the config last loaded (the start, or a reload).
  std::atomic<double> last_purge{0};
  std::atomic<double> last_reload{0};
  // Deliveries of the last hour by the outcome `deliveries` counts them under (the
  // console's summary).
  RecentCounts recent_deliveries;

  DaemonMetrics();
};

// What the config names, for StartSeries: every endpoint (and whether it verifies
// signatures) and every handler, by endpoint.
struct KnownSeries {
  std::vector<std::pair<std::string, bool>> endpoints;        // name, verified
  std::vector<std::pair<std::string, std::string>> handlers;  // endpoint, handler
};

// Creates, at 0, each counter series the config's endpoints and handlers can have (every
// outcome, reason and transition of theirs), so `rate()` and absence alerts have a series
// from the first scrape, before anything happened. Called at start and after each reload;
// series of a removed endpoint or handler stay (a counter never goes back).
void StartSeries(const KnownSeries& known);

// The delivery outcomes StartSeries creates for each endpoint: those an operator alerts on.
// (Rarer ones, e.g. challenge, ping, method_not_allowed, appear when first counted.)
inline constexpr const char* kDeliveryOutcomes[] = {
    "accepted",      "duplicate", "stale",         "ignored",   "unauthenticated", "bad_identity",
    "body_conflict", "too_large", "storage_error", "sync_busy", "sync_failed"};

DaemonMetrics& Metrics();

}  // namespace hookbox
