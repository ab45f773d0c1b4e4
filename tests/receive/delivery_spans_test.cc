// A delivery's spans (receive/delivery_spans.h), as the daemon's exporter (ops/spans.h) sends
// them in OTLP JSON to a sender that keeps every body: the receive span and its accept child,
// in the event's trace once identified, else the producer's or a new one; the producer's span
// as the receive span's parent; AcceptSpanId for the accept that stored a new event and a
// fresh id for any other; a 5xx and a failed accept marked as errors; nothing for a trace not
// sampled, nor for a delivery that began while tracing was off.
#include "receive/delivery_spans.h"

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "ops/spans.h"

using namespace hookbox;
using nlohmann::json;

namespace {

constexpr const char* kProducerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr const char* kProducerSpan = "00f067aa0ba902b7";

// Runs `deliver` with the daemon's exporter on and returns the spans it exported, by name.
std::map<std::string, json> ExportedSpans(const std::function<void()>& deliver) {
  std::mutex mu;
  std::map<std::string, json> spans;
  Spans().Configure("http://collector.test/v1/traces", {"hookbox", "test", "i-1"},
                    [&](const std::string&, const std::string& body) {
                      const json sent =
                          json::parse(body);  // kept: a range-for over a temporary's part dangles
                      std::lock_guard lock(mu);
                      for (const json& span : sent["resourceSpans"][0]["scopeSpans"][0]["spans"]) {
                        spans[span["name"].get<std::string>()] = span;
                      }
                      return Status::Ok();
                    });
  deliver();
  Spans().Stop();  // sends what is queued
  Spans().Configure("", {}, nullptr);
  std::lock_guard lock(mu);
  return spans;
}

// A span's attribute as text (a string's value, an integer's decimal), "<none>" if absent.
std::string Attribute(const json& span, const std::string& key) {
  for (const json& a : span["attributes"]) {
    if (a["key"] != key) continue;
    return a["value"].contains("stringValue") ? a["value"]["stringValue"].get<std::string>()
                                              : a["value"]["intValue"].get<std::string>();
  }
  return "<none>";
}

Delivery Posted(Headers headers = {}) {
  return Delivery{.method = "POST", .path = "/hooks/stripe", .headers = std::move(headers)};
}

std::string ProducerHeader(const std::string& flags = "01") {
  return std::string("00-") + kProducerTrace + "-" + kProducerSpan + "-" + flags;
}

// One identified delivery whose accept ended with `result`, answered `status`.
std::map<std::string, json> Accepted(const Delivery& d, const StatusOr<AcceptResult>& result,
                                     int status, const char* outcome) {
  return ExportedSpans([&] {
    DeliverySpans spans(d);
    REQUIRE(spans.on());
    const auto producer = TraceparentHeader(d.headers);
    spans.Identified(EventTrace("stripe", "evt_1", producer), "evt_1", "invoice.paid");
    spans.AcceptStarted();
    spans.AcceptEnded("stripe", "evt_1", result);
    spans.Finish(d, "stripe", "192.0.2.7", status, outcome);
  });
}

}  // namespace

TEST_CASE("a new event: receive, and its accept with the id its attempts name as parent",
          "[delivery_spans]") {
  auto spans = Accepted(Posted(), AcceptResult{.verdict = Verdict::kAccepted}, 200, "accepted");
  REQUIRE(spans.size() == 2);
  const json& receive = spans.at("receive");
  const json& accept = spans.at("accept");
  const TraceContext event = EventTrace("stripe", "evt_1", std::nullopt);
  CHECK(receive["traceId"] == event.trace_id);
  CHECK_FALSE(receive.contains("parentSpanId"));  // no producer's span
  CHECK(receive["kind"] == 2);
  CHECK_FALSE(receive.contains("status"));
  CHECK(Attribute(receive, "http.request.method") == "POST");
  CHECK(Attribute(receive, "url.path") == "/hooks/stripe");
  CHECK(Attribute(receive, "http.response.status_code") == "200");
  CHECK(Attribute(receive, "hookbox.outcome") == "accepted");
  CHECK(Attribute(receive, "client.address") == "192.0.2.7");
  CHECK(Attribute(receive, "hookbox.endpoint") == "stripe");
  CHECK(Attribute(receive, "hookbox.event_id") == "evt_1");
  CHECK(Attribute(receive, "hookbox.event_type") == "invoice.paid");

  CHECK(accept["traceId"] == event.trace_id);
  CHECK(accept["spanId"] == AcceptSpanId("stripe", "evt_1"));
  CHECK(accept["parentSpanId"] == receive["spanId"]);
  CHECK(accept["kind"] == 1);
  CHECK(Attribute(accept, "hookbox.verdict") == "accepted");
  CHECK(Attribute(accept, "hookbox.event_id") == "evt_1");
  CHECK_FALSE(accept.contains("status"));
}

TEST_CASE("the producer's traceparent: its trace, and its span as receive's parent",
          "[delivery_spans]") {
  auto spans = Accepted(Posted({{"traceparent", ProducerHeader()}}),
                        AcceptResult{.verdict = Verdict::kIgnored}, 200, "ignored");
  REQUIRE(spans.size() == 2);
  CHECK(spans.at("receive")["traceId"] == kProducerTrace);
  CHECK(spans.at("receive")["parentSpanId"] == kProducerSpan);
  CHECK(spans.at("accept")["traceId"] == kProducerTrace);
  // An ignored event is stored too: its accept takes the derived id.
  CHECK(spans.at("accept")["spanId"] == AcceptSpanId("stripe", "evt_1"));

  // The event's trace is another (as stored before): the producer's span is not its parent.
  auto other = ExportedSpans([] {
    const Delivery d = Posted({{"traceparent", ProducerHeader()}});
    DeliverySpans s(d);
    s.Identified(EventTrace("stripe", "evt_1", std::nullopt), "evt_1", "invoice.paid");
    s.Finish(d, "stripe", "", 200, "duplicate");
  });
  REQUIRE(other.size() == 1);  // no accept was started
  CHECK(other.at("receive")["traceId"] == EventTrace("stripe", "evt_1", std::nullopt).trace_id);
  CHECK_FALSE(other.at("receive").contains("parentSpanId"));
  CHECK(Attribute(other.at("receive"), "client.address") == "<none>");
}

TEST_CASE("a delivery refused before it is identified: the producer's trace, else a new one",
          "[delivery_spans]") {
  auto refused = [](Headers headers) {
    return ExportedSpans([&] {
      const Delivery d = Posted(std::move(headers));
      DeliverySpans s(d);
      s.Finish(d, "", "192.0.2.7", 404, "not_found");
    });
  };
  auto with_producer = refused({{"traceparent", ProducerHeader()}});
  REQUIRE(with_producer.size() == 1);
  CHECK(with_producer.at("receive")["traceId"] == kProducerTrace);
  CHECK(with_producer.at("receive")["parentSpanId"] == kProducerSpan);
  CHECK_FALSE(with_producer.at("receive").contains("status"));  // a 4xx is the client's
  CHECK(Attribute(with_producer.at("receive"), "hookbox.endpoint") == "<none>");
  CHECK(Attribute(with_producer.at("receive"), "hookbox.event_id") == "<none>");

  // An invalid traceparent, or none: a new trace of its own, with no parent.
  for (const Headers& headers : {Headers{}, Headers{{"traceparent", "00-not-a-trace-01"}}}) {
    auto alone = refused(headers);
    REQUIRE(alone.size() == 1);
    const std::string trace = alone.at("receive")["traceId"];
    CHECK(trace.size() == 32);
    CHECK(trace != kProducerTrace);
    CHECK_FALSE(alone.at("receive").contains("parentSpanId"));
  }
}

TEST_CASE("errors: a 5xx receive, a failed accept; a duplicate's accept has an id of its own",
          "[delivery_spans]") {
  auto failed = Accepted(Posted(), Status::Unavailable("database is locked", "inbox.db"), 503,
                         "storage_error");
  REQUIRE(failed.size() == 2);
  CHECK(failed.at("receive")["status"] == json{{"code", 2}, {"message", "storage_error"}});
  CHECK(failed.at("accept")["status"] ==
        json{{"code", 2}, {"message", "database is locked: inbox.db"}});
  CHECK(Attribute(failed.at("accept"), "hookbox.verdict") == "<none>");
  CHECK(failed.at("accept")["spanId"] != AcceptSpanId("stripe", "evt_1"));

  auto duplicate =
      Accepted(Posted(), AcceptResult{.verdict = Verdict::kDuplicate}, 200, "duplicate");
  REQUIRE(duplicate.size() == 2);
  CHECK(Attribute(duplicate.at("accept"), "hookbox.verdict") == "duplicate");
  CHECK(duplicate.at("accept")["spanId"] != AcceptSpanId("stripe", "evt_1"));
  CHECK(duplicate.at("accept")["spanId"].get<std::string>().size() == 16);
}

TEST_CASE("nothing for a trace not sampled, nor for a delivery begun with tracing off",
          "[delivery_spans]") {
  CHECK(Accepted(Posted({{"traceparent", ProducerHeader("00")}}),
                 AcceptResult{.verdict = Verdict::kAccepted}, 200, "accepted")
            .empty());

  const Delivery d = Posted();
  DeliverySpans off(d);  // the exporter is off between tests
  CHECK_FALSE(off.on());
  CHECK(ExportedSpans([&] {
          off.Identified(EventTrace("stripe", "evt_1", std::nullopt), "evt_1", "invoice.paid");
          off.AcceptStarted();
          off.AcceptEnded("stripe", "evt_1", AcceptResult{.verdict = Verdict::kAccepted});
          off.Finish(d, "stripe", "", 200, "accepted");
        }).empty());
}
