// ops/spans.h: a span's OTLP JSON (the field names, ids as hex, times and 64-bit integers as
// decimal strings, status only for an error), the sampled flag, and the exporter's bounds:
// batches of at most `batch` spans, a full queue dropping and counting, a refused export
// dropping its batch and counting it, nothing queued while off. The encoding against a real
// OTLP receiver is tests/interop/tracing.test.mjs.
#include "ops/spans.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "ops/daemon_metrics.h"

using namespace hookbox;
using nlohmann::json;

namespace {

Span Sample(const std::string& name) {
  Span s;
  s.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  s.span_id = "00f067aa0ba902b7";
  s.name = name;
  s.kind = SpanKind::kServer;
  s.start =
      std::chrono::system_clock::time_point(std::chrono::nanoseconds(1'700'000'000'123'456'789));
  s.end = s.start + std::chrono::milliseconds(3);
  s.attributes = {{"url.path", std::string("/hooks/x")},
                  {"http.response.status_code", int64_t{200}}};
  return s;
}

uint64_t Dropped(const char* reason) { return Metrics().spans_dropped.With({reason}).Value(); }

}  // namespace

TEST_CASE("a span in OTLP's JSON encoding", "[spans]") {
  Span child = Sample("accept \xff");
  child.parent_span_id = "b7ad6b7169203331";
  child.kind = SpanKind::kInternal;
  child.error = true;
  child.status_message = "database is locked";
  const json j =
      json::parse(OtlpTraceJson({Sample("receive"), child}, {"hookbox-eu", "1.2.3", "a1b2"}));
  const json& rs = j["resourceSpans"][0];
  CHECK(rs["resource"]["attributes"] ==
        json::parse(R"([{"key":"service.name","value":{"stringValue":"hookbox-eu"}},
                        {"key":"service.version","value":{"stringValue":"1.2.3"}},
                        {"key":"service.instance.id","value":{"stringValue":"a1b2"}}])"));
  const json& scope = rs["scopeSpans"][0];
  CHECK(scope["scope"] == json{{"name", "hookbox"}, {"version", "1.2.3"}});
  const json& root = scope["spans"][0];
  CHECK(root["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(root["spanId"] == "00f067aa0ba902b7");
  CHECK_FALSE(root.contains("parentSpanId"));
  CHECK(root["kind"] == 2);
  CHECK(root["startTimeUnixNano"] == "1700000000123456789");
  CHECK(root["endTimeUnixNano"] == "1700000000126456789");
  CHECK(root["attributes"][1] ==
        json::parse(R"({"key":"http.response.status_code","value":{"intValue":"200"}})"));
  CHECK_FALSE(root.contains("status"));
  const json& accept = scope["spans"][1];
  CHECK(accept["parentSpanId"] == "b7ad6b7169203331");
  CHECK(accept["kind"] == 1);
  CHECK(accept["name"] == "accept \xEF\xBF\xBD");  // not UTF-8: U+FFFD, the batch still goes
  CHECK(accept["status"] == json{{"code", 2}, {"message", "database is locked"}});
}

TEST_CASE("the sampled flag is bit 0 of trace-flags", "[spans]") {
  CHECK(Sampled("01"));
  CHECK(Sampled("03"));
  CHECK(Sampled("ff"));
  CHECK_FALSE(Sampled("00"));
  CHECK_FALSE(Sampled("02"));
  CHECK_FALSE(Sampled("0"));
}

TEST_CASE("the exporter sends batches of at most `batch` spans, and all at a stop", "[spans]") {
  std::mutex mu;
  std::vector<size_t> sizes;
  std::vector<std::string> urls;  // checked after Stop: Catch2 asserts on this thread only
  SpanExporter exporter({.queue = 100, .batch = 4, .interval = std::chrono::milliseconds(20)});
  CHECK_FALSE(exporter.enabled());
  exporter.Add(Sample("while off"));  // dropped: not counted, never sent
  exporter.Configure(
      "http://collector/v1/traces", {"hookbox", "", ""},
      [&](const std::string& url, const std::string& body) {
        std::lock_guard lock(mu);
        urls.push_back(url);
        sizes.push_back(json::parse(body)["resourceSpans"][0]["scopeSpans"][0]["spans"].size());
        return Status::Ok();
      });
  CHECK(exporter.enabled());
  const uint64_t exported = Metrics().spans_exported.With({}).Value();
  for (int i = 0; i < 10; ++i) exporter.Add(Sample("s" + std::to_string(i)));
  exporter.Stop();
  CHECK_FALSE(exporter.enabled());
  std::lock_guard lock(mu);
  size_t total = 0;
  for (size_t n : sizes) {
    CHECK(n <= 4);
    total += n;
  }
  CHECK(total == 10);
  for (const std::string& url : urls) CHECK(url == "http://collector/v1/traces");
  CHECK(Metrics().spans_exported.With({}).Value() == exported + 10);
}

TEST_CASE("a full queue drops new spans; a refused export drops its batch; both counted",
          "[spans]") {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls{0};
  SpanExporter exporter({.queue = 3, .batch = 3, .interval = std::chrono::milliseconds(10)});
  exporter.Configure("http://collector/v1/traces", {"hookbox", "", ""},
                     [&](const std::string&, const std::string&) {
                       // The first export waits until the test has filled the queue again.
                       if (calls++ == 0) released.wait();
                       return Status::Unavailable("the collector answered 503", "");
                     });
  const uint64_t full_before = Dropped("queue_full");
  const uint64_t failed_before = Dropped("export_failed");
  for (int i = 0; i < 3; ++i) exporter.Add(Sample("first batch"));
  while (calls.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // The first batch is out (its send blocked): the queue takes 3 more, then refuses.
  for (int i = 0; i < 5; ++i) exporter.Add(Sample("second"));
  CHECK(Dropped("queue_full") == full_before + 2);
  release.set_value();
  exporter.Stop();
  CHECK(Dropped("export_failed") == failed_before + 6);
}

TEST_CASE("a reload without tracing.otlp drops what is queued and takes no more", "[spans]") {
  std::atomic<int> sent{0};
  // A long interval: nothing goes out before the reload turns export off.
  SpanExporter exporter({.queue = 100, .batch = 50, .interval = std::chrono::seconds(60)});
  auto count = [&](const std::string&, const std::string& body) {
    sent +=
        static_cast<int>(json::parse(body)["resourceSpans"][0]["scopeSpans"][0]["spans"].size());
    return Status::Ok();
  };
  exporter.Configure("http://collector/v1/traces", {"hookbox", "", ""}, count);
  for (int i = 0; i < 3; ++i) exporter.Add(Sample("before the reload"));
  exporter.Configure("", {"hookbox", "", ""}, count);
  CHECK_FALSE(exporter.enabled());
  exporter.Add(Sample("after the reload"));
  exporter.Stop();
  CHECK(sent.load() == 0);
  // On again (a later reload): exports resume.
  exporter.Configure("http://collector/v1/traces", {"hookbox", "", ""}, count);
  exporter.Add(Sample("on again"));
  exporter.Stop();
  CHECK(sent.load() == 1);
}
