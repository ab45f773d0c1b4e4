// W3C trace context (base/trace.h): the traceparent parser against the specification's
// rules (each way a header is invalid starts a new trace), the trace hookbox starts for an
// event without one, and the producer's header found among request and stored headers.
#include "base/trace.h"

#include <catch2/catch.hpp>
#include <set>
#include <thread>

using namespace hookbox;

namespace {
const std::string kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kParent = "00f067aa0ba902b7";
const std::string kValid = "00-" + kTrace + "-" + kParent + "-01";
}  // namespace

TEST_CASE("ParseTraceparent: version 00 exactly; each invalid header refused") {
  auto t = ParseTraceparent(kValid);
  REQUIRE(t);
  CHECK(t->trace_id == kTrace);
  CHECK(t->parent_id == kParent);
  CHECK(t->flags == "01");
  CHECK(ParseTraceparent("00-" + kTrace + "-" + kParent + "-00")->flags == "00");

  for (const std::string& bad : {
           std::string(), kValid.substr(0, 54),                       // cut short
           kValid + "-",                                              // version 00 is 55 exactly
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-" + kParent + "-01",  // upper-case hex
           "00-00000000000000000000000000000000-" + kParent + "-01",  // all-zero trace id
           "00-" + kTrace + "-0000000000000000-01",                   // all-zero parent id
           "ff-" + kTrace + "-" + kParent + "-01",                    // version ff
           "0x-" + kTrace + "-" + kParent + "-01",                    // version not hex
           "00_" + kTrace + "-" + kParent + "-01",                    // a wrong separator
           "00-" + kTrace + "-" + kParent + "-0g",                    // flags not hex
           "00-" + kTrace.substr(1) + "z-" + kParent + "-01",         // a trace id not hex
           kValid + ", " + kValid,                                    // a repeated header
       }) {
    INFO(bad);
    CHECK_FALSE(ParseTraceparent(bad).has_value());
  }
  // A later version: its first four fields, when what follows starts with `-`.
  auto later = ParseTraceparent("01-" + kTrace + "-" + kParent + "-01-what-comes-next");
  REQUIRE(later);
  CHECK(later->trace_id == kTrace);
  CHECK(ParseTraceparent("01-" + kTrace + "-" + kParent + "-01").has_value());
  CHECK_FALSE(ParseTraceparent("01-" + kTrace + "-" + kParent + "-01x").has_value());
}

TEST_CASE("EventTrace: the producer's when valid, else derived from endpoint and id") {
  const TraceContext own = EventTrace("stripe", "evt_1", kValid);
  CHECK(own.trace_id == kTrace);
  CHECK(own.parent_id == kParent);

  const TraceContext derived = EventTrace("stripe", "evt_1", std::nullopt);
  CHECK(derived.trace_id.size() == 32);
  CHECK(derived.parent_id.size() == 16);
  CHECK(derived.flags == "01");
  CHECK(ParseTraceparent(Traceparent(derived, derived.parent_id)).has_value());
  // The same on every replica and every look; another event, another trace.
  CHECK(EventTrace("stripe", "evt_1", std::nullopt).trace_id == derived.trace_id);
  CHECK(EventTrace("stripe", "evt_2", std::nullopt).trace_id != derived.trace_id);
  CHECK(EventTrace("github", "evt_1", std::nullopt).trace_id != derived.trace_id);
  // A malformed one is no trace: the event starts its own.
  CHECK(EventTrace("stripe", "evt_1", std::string_view("00-garbage")).trace_id == derived.trace_id);
}

TEST_CASE("the producer's traceparent among request and stored headers") {
  Headers one = {{"Traceparent", kValid}, {"Content-Type", "application/json"}};
  CHECK(TraceparentHeader(one) == kValid);
  Headers two = {{"traceparent", kValid}, {"TRACEPARENT", kValid}};
  CHECK_FALSE(TraceparentHeader(two).has_value());  // repeated: invalid, a new trace
  CHECK_FALSE(TraceparentHeader(Headers{}).has_value());

  CHECK(TraceparentOfStoredHeaders(R"({"Content-Type":"x","Traceparent":")" + kValid + "\"}") ==
        kValid);
  CHECK_FALSE(TraceparentOfStoredHeaders(R"({"Content-Type":"x"})").has_value());
  CHECK_FALSE(TraceparentOfStoredHeaders(R"({"X-Note":"traceparent"})").has_value());
  CHECK_FALSE(TraceparentOfStoredHeaders("not json, traceparent").has_value());
  CHECK_FALSE(TraceparentOfStoredHeaders("").has_value());
}

TEST_CASE("NewSpanId: 16 hex digits, fresh each time") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewSpanId();
    REQUIRE(id.size() == 16);
    REQUIRE(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
  CHECK(Traceparent({kTrace, kParent, "01"}, "1111111111111111") ==
        "00-" + kTrace + "-1111111111111111-01");
}

TEST_CASE("NewTraceId: 32 hex digits, fresh each time, and fresh on every thread") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewTraceId();
    REQUIRE(id.size() == 32);
    REQUIRE(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(id);
  }
  // Each thread's generator is seeded on its own: two threads never share a sequence.
  std::string other;
  std::thread([&] { other = NewTraceId(); }).join();
  seen.insert(other);
  CHECK(seen.size() == 1001);
}

TEST_CASE("AcceptSpanId: the same for an event wherever it is computed, another for others") {
  const std::string id = AcceptSpanId("stripe", "evt_1");
  CHECK(id.size() == 16);
  CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(AcceptSpanId("stripe", "evt_1") == id);
  CHECK(AcceptSpanId("stripe", "evt_2") != id);
  CHECK(AcceptSpanId("github", "evt_1") != id);
  // Not the derived trace's parent id, which no exported span has.
  CHECK(EventTrace("stripe", "evt_1", std::nullopt).parent_id != id);
}
