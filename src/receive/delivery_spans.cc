// A delivery's receive and accept spans (see delivery_spans.h).
#include "receive/delivery_spans.h"

#include "ops/spans.h"

namespace hookbox {

DeliverySpans::DeliverySpans(const Delivery& d) : on_(Spans().enabled()) {
  if (!on_) return;
  start_ = std::chrono::system_clock::now();
  if (auto header = TraceparentHeader(d.headers)) producer_ = ParseTraceparent(*header);
  if (producer_) {
    trace_id_ = producer_->trace_id;
    flags_ = producer_->flags;
  }
  span_id_ = NewSpanId();
}

void DeliverySpans::Identified(const TraceContext& event_trace, const std::string& event_id,
                               const std::string& event_type) {
  if (!on_) return;
  trace_id_ = event_trace.trace_id;
  flags_ = event_trace.flags;
  event_id_ = event_id;
  event_type_ = event_type;
}

void DeliverySpans::AcceptStarted() {
  if (!on_) return;
  accept_.emplace();
  accept_->start = std::chrono::system_clock::now();
}

void DeliverySpans::AcceptEnded(const std::string& endpoint, const std::string& event_id,
                                const StatusOr<AcceptResult>& result) {
  if (!on_ || !accept_) return;
  accept_->end = std::chrono::system_clock::now();
  accept_->ended = true;
  const bool stored_new = result.ok() && (result->verdict == Verdict::kAccepted ||
                                          result->verdict == Verdict::kIgnored);
  accept_->span_id = stored_new ? AcceptSpanId(endpoint, event_id) : NewSpanId();
  if (result.ok()) {
    accept_->verdict = VerdictName(result->verdict);
  } else {
    accept_->error = result.status().ToString();
  }
}

void DeliverySpans::Finish(const Delivery& d, const std::string& endpoint,
                           const std::string& client, int status, const char* outcome) {
  if (!on_ || !Sampled(flags_)) return;
  if (trace_id_.empty()) trace_id_ = NewTraceId();
  Span receive;
  receive.trace_id = trace_id_;
  receive.span_id = span_id_;
  if (producer_ && producer_->trace_id == trace_id_) receive.parent_span_id = producer_->parent_id;
  receive.name = "receive";
  receive.kind = SpanKind::kServer;
  receive.start = start_;
  receive.end = std::chrono::system_clock::now();
  receive.attributes = {{"http.request.method", d.method},
                        {"url.path", d.path},
                        {"http.response.status_code", int64_t{status}},
                        {"hookbox.outcome", std::string(outcome)}};
  if (!client.empty()) receive.attributes.push_back({"client.address", client});
  if (!endpoint.empty()) receive.attributes.push_back({"hookbox.endpoint", endpoint});
  if (!event_id_.empty()) receive.attributes.push_back({"hookbox.event_id", event_id_});
  if (!event_type_.empty()) receive.attributes.push_back({"hookbox.event_type", event_type_});
  // A server span is in error for a 5xx: a 4xx is the client's (OpenTelemetry's HTTP
  // conventions).
  if (status >= 500) {
    receive.error = true;
    receive.status_message = outcome;
  }
  if (accept_ && accept_->ended) {
    Span accept;
    accept.trace_id = trace_id_;
    accept.span_id = accept_->span_id;
    accept.parent_span_id = span_id_;
    accept.name = "accept";
    accept.start = accept_->start;
    accept.end = accept_->end;
    accept.attributes = {{"hookbox.endpoint", endpoint}, {"hookbox.event_id", event_id_}};
    if (!accept_->verdict.empty())
      accept.attributes.push_back({"hookbox.verdict", accept_->verdict});
    if (!accept_->error.empty()) {
      accept.error = true;
      accept.status_message = accept_->error;
    }
    Spans().Add(std::move(accept));
  }
  Spans().Add(std::move(receive));
}

}  // namespace hookbox
