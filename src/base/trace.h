// W3C Trace Context (https://www.w3.org/TR/trace-context/, level 1) for events: which trace
// an event belongs to, and the `traceparent` each handler attempt is given (README, "Trace
// context"). An event's trace is the producer's, when its delivery carried one valid
// `traceparent` header; otherwise hookbox starts one, derived from the endpoint and the
// event id, so every replica, every restart and every later look (`inbox show`) names the
// same trace without storing anything beside the headers the inbox already keeps.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/headers.h"

namespace hookbox {

struct TraceContext {
  std::string trace_id;   // 32 lowercase hex digits, not all zero
  std::string parent_id;  // 16 lowercase hex digits, not all zero: the span that sent it
  std::string flags;      // 2 hex digits; bit 0 is "sampled"
};

// A `traceparent` value, as the specification's parser reads it: `00-<trace id>-<parent
// id>-<flags>`, lowercase hex, neither id all zeros; version `ff` is invalid; a later
// version is read by its first four fields when what follows them starts with `-`.
// nullopt for anything else (the event then starts a new trace).
std::optional<TraceContext> ParseTraceparent(std::string_view value);

// The event's trace: the producer's, when `producer` is one valid traceparent; else a new
// one whose ids are hashed from the endpoint and event id (sampled).
TraceContext EventTrace(std::string_view endpoint, std::string_view event_id,
                        std::optional<std::string_view> producer);

// The producer's traceparent among the request headers: its value when the header occurs
// exactly once (the specification makes a repeated one invalid), else nullopt.
std::optional<std::string_view> TraceparentHeader(const Headers& headers);

// The same, read from the stored headers (a JSON object, a repeated header's values joined
// by ", ", which is then no valid traceparent). nullopt when absent or unreadable.
std::optional<std::string> TraceparentOfStoredHeaders(std::string_view headers_json);

// A new span id: 16 lowercase hex digits, never all zero, from a generator of the thread's own
// seeded from the system's CSPRNG (unique, not secret).
std::string NewSpanId();
// A new trace id, 32 digits alike: a delivery's that was refused before it had an event id.
std::string NewTraceId();

// The span id of the accept that stored the event, hashed from the endpoint and event id as
// the derived trace is: every attempt, on any replica and after any restart, names it as its
// parent (the exported spans, README "Trace context") with nothing more stored.
std::string AcceptSpanId(std::string_view endpoint, std::string_view event_id);

// `00-<trace id>-<span id>-<flags>`: what a handler attempt carries as its parent.
std::string Traceparent(const TraceContext& trace, std::string_view span_id);

}  // namespace hookbox
