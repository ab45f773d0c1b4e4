// HandlerStates, the inbox's role for each handler's own state: the operator's pause, the
// circuit breaker, the rate bucket, and the jobs filed under a handler's name (the
// dispatcher's gates, the metrics, the `handler` verbs). Kept in the inbox database, so it
// survives restarts and every replica honours it. Thread-safe: any thread, at the same time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/job.h"
#include "base/status.h"
#include "inbox/jobs.h"
#include "ops/clock.h"

namespace hookbox {

// The unfinished jobs of one handler (Inbox::UnfinishedByHandler).
struct HandlerBacklog {
  std::string endpoint, handler;
  int64_t unfinished = 0;  // pending or processing
  int64_t held = 0;        // of those, held for want of their handler (HoldForHandler)
};

// What Inbox::Reassign did: jobs moved to the new handler, and jobs of the old one left
// where they were (their row already has a job of the new handler, or they are running).
struct ReassignCounts {
  int64_t moved = 0, kept = 0;
};

// Handler state (DESIGN.md, "Handler state"): what holds a handler's jobs back
// besides their due time. Kept in the inbox database (table handler_state), so it survives
// restarts and every PostgreSQL replica's claim honours it.
enum class Circuit { kClosed, kOpen, kHalfOpen };
const char* CircuitName(Circuit c);  // "closed", "open", "half-open"

// A handler's `circuit: {failures: N, cooldown: D}`.
struct CircuitLimit {
  int failures = 0;  // consecutive failed attempts that open it; 0 = no breaker
  std::chrono::milliseconds cooldown{0};
};

// One row of handler_state, as stored (times RFC 3339 text; "" = NULL).
struct HandlerState {
  std::string endpoint, handler;
  bool paused = false;
  std::string paused_reason, paused_at;
  Circuit circuit = Circuit::kClosed;
  int64_t failures = 0;
  std::string open_until, probe_until;
  std::optional<double> tokens;  // nullopt: full
  std::string refilled_at;
};

// A handler state in one word, as `handler list`, the console and a bulk plan print it:
// "paused" (the operator's, named first), "circuit-open", "half-open" or "running".
const char* HandlerStateName(const HandlerState& state);

// A handler as `handler list` shows it: its state (a default one when it has no row) and
// its jobs: pending (not yet due, or held), due (pending and due now), running
// (processing), dead.
struct HandlerStatus {
  HandlerState state;
  int64_t pending = 0, due = 0, running = 0, dead = 0;
  // When the oldest due job became due (its next_attempt_at, RFC 3339): how long the
  // handler's backlog has waited (the `backlog` alert). "" when nothing is due.
  std::string oldest_due;
};

// A change of a circuit (Inbox::RecordCircuit, and the claim's probe): for the log line
// and hookbox_handler_circuit_transitions_total.
struct CircuitTransition {
  std::string endpoint, handler;
  Circuit from = Circuit::kClosed, to = Circuit::kClosed;
  int64_t failures = 0;
};

// HandlerStates: each handler's own state (pause, circuit, rate bucket) and the jobs filed
// under its name, for the dispatcher's gates, the metrics and the `handler` verbs.
class HandlerStates {
 public:
  virtual ~HandlerStates() = default;

  // Handler state: the operator's pause (state kept, with the reason and when) and resume,
  // which also closes the handler's circuit if it is open or half-open. Returns how many
  // handlers changed. A pause keeps pending jobs pending: no try spent.
  virtual StatusOr<int64_t> SetPaused(const std::vector<HandlerRef>& handlers, bool paused,
                                      const std::string& reason, TimePoint now) = 0;
  // Every handler with a state row or an unfinished or dead job, by endpoint and handler.
  // Without `count_jobs`, only the handlers with a state row, and no job counts: a read of
  // the small state table, for the paused gauge at every scrape, instead of a count over
  // every unfinished and dead job.
  virtual StatusOr<std::vector<HandlerStatus>> Handlers(TimePoint now, bool count_jobs) = 0;
  // A finished attempt of a handler with a circuit breaker: failed and timeout count
  // towards `limit.failures` (and re-open a half-open circuit for another cooldown); ok
  // resets the count and closes it; permanent counts for neither, and frees a half-open
  // circuit's probe. The transition, if the circuit changed state.
  virtual StatusOr<std::optional<CircuitTransition>> RecordCircuit(const HandlerRef& handler,
                                                                   Outcome outcome,
                                                                   const CircuitLimit& limit,
                                                                   TimePoint now) = 0;

  // Unfinished jobs by (endpoint, handler), held ones counted apart; ordered by both.
  virtual StatusOr<std::vector<HandlerBacklog>> UnfinishedByHandler() = 0;
  // Gives the jobs of handler `from` on `endpoint` that are not running and not done
  // (pending, held, dead) to handler `to`: held ones become due at `now`, the others keep
  // their schedule and status (a dead one runs under `to` after `inbox retry`). A row that
  // already has a job of `to` keeps its `from` job. The caller checks that `to` exists.
  virtual StatusOr<ReassignCounts> Reassign(const std::string& endpoint, const std::string& from,
                                            const std::string& to, TimePoint now) = 0;
  // Deletes the jobs of `handler` on `endpoint` that are not running and not done (pending,
  // held, dead), with their attempts, and settles their rows (processed when every job
  // left is done). Returns how many.
  virtual StatusOr<int64_t> DropJobs(const std::string& endpoint, const std::string& handler,
                                     TimePoint now) = 0;

  // Every (endpoint, handler) that has a job of any status or a handler_state row, ordered
  // by both: the names an operator may give that the config no longer has (the CLI's
  // --handler). Reads every job: asked only for a name the config does not settle.
  virtual StatusOr<std::vector<HandlerRef>> KnownHandlers() = 0;
  // Deletes the handler_state row of a handler (its pause, circuit and rate bucket), so that
  // `handler list` and hookbox_handler_paused forget it: for a handler the config no longer
  // has (the CLI checks). Its jobs stay as they are. Returns whether there was a row.
  virtual StatusOr<bool> ForgetHandler(const HandlerRef& handler) = 0;
};

}  // namespace hookbox
