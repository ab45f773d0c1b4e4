// The spans of one delivery, for `tracing.otlp` (ops/spans.h, README "Trace context"):
//   receive (server): the request, from the pipeline taking it to its answer; and
//   accept (internal, receive's child): its inbox transaction.
// The trace is the event's (base/trace.h EventTrace) once the delivery is identified; before
// that (a 401, a 404, a refused client) the producer's traceparent, else a new trace. The
// receive span's parent is the producer's span when it sent one. The accept span that
// stored a new event takes the id AcceptSpanId derives, which each attempt names as its
// parent (work/attempt.cc). With tracing off, nothing here runs past one flag.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/delivery.h"
#include "base/trace.h"
#include "inbox/event_store.h"

namespace hookbox {

// What the accept span records until the answer.
struct AcceptSpan {
  std::chrono::system_clock::time_point start, end;
  std::string span_id, verdict, error;
  bool ended = false;
};

class DeliverySpans {
 public:
  explicit DeliverySpans(const Delivery& d);

  bool on() const { return on_; }
  // The delivery is identified: its event's trace.
  void Identified(const TraceContext& event_trace, const std::string& event_id,
                  const std::string& event_type);
  // Around the inbox transaction. The accept that stored a new event (`accepted` or
  // `ignored`, not a duplicate or a stale one) takes AcceptSpanId: its attempts' parent.
  void AcceptStarted();
  void AcceptEnded(const std::string& endpoint, const std::string& event_id,
                   const StatusOr<AcceptResult>& result);
  // The answer: exports both spans (when the trace is sampled).
  void Finish(const Delivery& d, const std::string& endpoint, const std::string& client, int status,
              const char* outcome);

 private:
  bool on_ = false;
  std::chrono::system_clock::time_point start_;
  std::optional<TraceContext> producer_;  // a valid traceparent of the request
  std::string trace_id_, flags_ = "01", span_id_, event_id_, event_type_;
  std::optional<AcceptSpan> accept_;
};

}  // namespace hookbox
