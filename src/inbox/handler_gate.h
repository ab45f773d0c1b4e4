// The handler state's rules, shared by both backends (DESIGN.md, "Handler state"): whether
// a claim may take a handler's jobs now and how many (pause, circuit breaker, token
// bucket), what a claim leaves behind in the state row, and what a finished attempt does
// to the circuit. Pure functions over a HandlerState and a time: the backends read and
// write the row (under a lock on PostgreSQL) and call these in between, so the two agree
// and the rules are tested without a database.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/job.h"
#include "inbox/inbox.h"
#include "ops/clock.h"

namespace hookbox {

// What a claim may take of one handler's due jobs now.
struct GateDecision {
  bool unlimited = true;  // nothing holds it: claimed with everyone else's jobs
  int budget = 0;         // when !unlimited: at most this many (0: none now)
  bool probe = false;     // the budget is the half-open circuit's one probe
};

// `rate`: the handler's limit, or nullptr.
GateDecision DecideClaim(const HandlerState& state, const HandlerRate* rate, TimePoint now);

// The tokens the bucket holds at `now`: refilled at `rate` since refilled_at, at most one
// second's worth (at least 1). A state with no tokens yet is full.
double RefilledTokens(const HandlerState& state, double rate, TimePoint now);

// After a claim that took `claimed` jobs under `decision`: the tokens taken, the probe's
// lease noted (the circuit becomes half-open; the transition is returned).
std::optional<CircuitTransition> AfterClaim(HandlerState& state, const HandlerRate* rate,
                                            const GateDecision& decision, int claimed,
                                            TimePoint now, std::chrono::milliseconds lease);

// A finished attempt's effect on the circuit (Inbox::RecordCircuit's rules).
// An operator's pause or resume (Inbox::SetPaused): false when the state already is so
// (paused with that reason, or running with a closed circuit), and nothing is to be written.
// A resume also closes an open or half-open circuit (and clears its count of failures).
bool ApplyPause(HandlerState& state, bool paused, const std::string& reason, TimePoint now);

std::optional<CircuitTransition> ApplyOutcome(HandlerState& state, Outcome outcome,
                                              const CircuitLimit& limit, TimePoint now);

// A stored time ("" = none).
std::optional<TimePoint> StateTime(const std::string& text);

}  // namespace hookbox
