// The handler state's rules (see handler_gate.h).
#include "inbox/handler_gate.h"

#include <algorithm>
#include <cmath>

namespace hookbox {

const char* CircuitName(Circuit c) {
  switch (c) {
    case Circuit::kClosed:
      return "closed";
    case Circuit::kOpen:
      return "open";
    case Circuit::kHalfOpen:
      return "half-open";
  }
  return "closed";
}

const char* HandlerStateName(const HandlerState& state) {
  if (state.paused) return "paused";
  if (state.circuit == Circuit::kOpen) return "circuit-open";
  if (state.circuit == Circuit::kHalfOpen) return "half-open";
  return "running";
}

std::optional<TimePoint> StateTime(const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto micros = ParseRfc3339Micros(text);
  if (!micros) return std::nullopt;
  return TimePoint(
      std::chrono::duration_cast<TimePoint::duration>(std::chrono::microseconds(*micros)));
}

double RefilledTokens(const HandlerState& state, double rate, TimePoint now) {
  const double capacity = std::max(1.0, rate);
  if (!state.tokens) return capacity;
  double tokens = *state.tokens;
  if (auto at = StateTime(state.refilled_at); at && now > *at) {
    tokens += rate * std::chrono::duration<double>(now - *at).count();
  }
  return std::min(capacity, tokens);
}

GateDecision DecideClaim(const HandlerState& state, const HandlerRate* rate, TimePoint now) {
  GateDecision d;
  if (state.paused) return GateDecision{false, 0, false};
  if (state.circuit == Circuit::kOpen || state.circuit == Circuit::kHalfOpen) {
    // Open: nothing until the cooldown ends. Half-open: nothing while the probe's lease
    // lasts (its worker may have died: then another probe goes).
    const std::string& until =
        state.circuit == Circuit::kOpen ? state.open_until : state.probe_until;
    auto at = StateTime(until);
    if (at && *at > now) return GateDecision{false, 0, false};
    d = GateDecision{false, 1, true};
  }
  if (rate) {
    const double tokens = RefilledTokens(state, rate->per_second, now);
    const int whole = tokens < 1 ? 0 : static_cast<int>(std::min(std::floor(tokens), 1e9));
    d.budget = d.unlimited ? whole : std::min(d.budget, whole);
    d.unlimited = false;
  }
  return d;
}

std::optional<CircuitTransition> AfterClaim(HandlerState& state, const HandlerRate* rate,
                                            const GateDecision& decision, int claimed,
                                            TimePoint now, std::chrono::milliseconds lease) {
  if (rate) {
    state.tokens = RefilledTokens(state, rate->per_second, now) - claimed;
    auto at = StateTime(state.refilled_at);
    // A replica whose clock is behind never moves the refill time back (tokens twice).
    if (!at || now > *at) state.refilled_at = FormatTime(now);
  }
  if (!decision.probe || claimed == 0) return std::nullopt;
  CircuitTransition t{state.endpoint, state.handler, state.circuit, Circuit::kHalfOpen,
                      state.failures};
  state.circuit = Circuit::kHalfOpen;
  state.probe_until = FormatTime(now + lease);
  if (t.from == t.to) return std::nullopt;  // a probe after a probe whose worker died
  return t;
}

std::optional<CircuitTransition> ApplyOutcome(HandlerState& state, Outcome outcome,
                                              const CircuitLimit& limit, TimePoint now) {
  const Circuit from = state.circuit;
  switch (outcome) {
    case Outcome::kOk:
      state.failures = 0;
      state.circuit = Circuit::kClosed;
      state.open_until.clear();
      state.probe_until.clear();
      break;
    case Outcome::kPermanent:
      // The downstream answered, but about this event: neither a failure nor a success.
      // A half-open circuit lets the next probe through.
      state.probe_until.clear();
      break;
    case Outcome::kFailed:
    case Outcome::kTimeout:
      ++state.failures;
      if (from == Circuit::kHalfOpen ||
          (from == Circuit::kClosed && limit.failures > 0 && state.failures >= limit.failures)) {
        state.circuit = Circuit::kOpen;
        state.open_until = FormatTime(now + limit.cooldown);
        state.probe_until.clear();
      }
      break;
  }
  if (state.circuit == from) return std::nullopt;
  return CircuitTransition{state.endpoint, state.handler, from, state.circuit, state.failures};
}

bool ApplyPause(HandlerState& state, bool paused, const std::string& reason, TimePoint now) {
  // A resume is the operator's "run it again": an open or half-open circuit closes too.
  const bool circuit = !paused && (state.circuit != Circuit::kClosed || state.failures != 0);
  if (circuit) {
    state.circuit = Circuit::kClosed;
    state.failures = 0;
    state.open_until.clear();
    state.probe_until.clear();
  }
  if (state.paused == paused && (!paused || state.paused_reason == reason)) return circuit;
  state.paused = paused;
  state.paused_reason = paused ? reason : "";
  state.paused_at = paused ? FormatTime(now) : "";
  return true;
}

}  // namespace hookbox
