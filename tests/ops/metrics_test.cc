// Unit tests of the metrics registry: what it renders must parse as Prometheus text, label
// values must be escaped, histograms must stay consistent, and recording from many threads
// must lose nothing.
#include "ops/metrics.h"

#include <catch2/catch.hpp>
#include <thread>

#include "tests/ops/prometheus_text.h"

using namespace hookbox;
using hookbox::testing::ParsePrometheusText;

namespace {

std::string Errors(const hookbox::testing::Exposition& e) {
  std::string out;
  for (const std::string& s : e.errors) out += s + "\n";
  return out;
}

}  // namespace

TEST_CASE("counters render with their labels and parse back") {
  MetricsRegistry r;
  CounterFamily& deliveries =
      r.AddCounter("t_deliveries_total", "Deliveries.", {"endpoint", "outcome"});
  deliveries.With({"stripe", "accepted"}).Inc();
  deliveries.With({"stripe", "accepted"}).Inc(2);
  deliveries.With({"gh", "duplicate"}).Inc();
  auto e = ParsePrometheusText(r.Render());
  INFO(r.Render());
  REQUIRE(Errors(e) == "");
  CHECK(e.types.at("t_deliveries_total") == "counter");
  CHECK(e.Get(R"(t_deliveries_total{endpoint="stripe",outcome="accepted"})") == 3);
  CHECK(e.Get(R"(t_deliveries_total{endpoint="gh",outcome="duplicate"})") == 1);
  CHECK(e.Sum("t_deliveries_total") == 4);
}

TEST_CASE("label values that would break the format are escaped") {
  MetricsRegistry r;
  CounterFamily& c = r.AddCounter("t_total", "Help with a \\ backslash\nand a newline.", {"name"});
  const std::string nasty = "a\"b\\c\nd} e=\"f\"";
  c.With({nasty}).Inc(5);
  std::string text = r.Render();
  INFO(text);
  auto e = ParsePrometheusText(text);
  REQUIRE(Errors(e) == "");
  // The parser unescapes: the value comes back exactly.
  CHECK(e.Get("t_total{name=\"" + nasty + "\"}") == 5);
  CHECK(text.find("# HELP t_total Help with a \\\\ backslash\\nand a newline.\n") !=
        std::string::npos);
  CHECK(EscapeLabelValue("x\"y") == "x\\\"y");
}

TEST_CASE("histograms have cumulative buckets, +Inf equal to the count, and a sum") {
  MetricsRegistry r;
  HistogramFamily& h = r.AddHistogram("t_latency_seconds", "Latency.", {"endpoint"}, {0.1, 1, 10});
  Histogram& stripe = h.With({"stripe"});
  for (double v : {0.05, 0.1, 0.5, 2.0, 20.0}) stripe.Observe(v);
  auto e = ParsePrometheusText(r.Render());
  INFO(r.Render());
  REQUIRE(Errors(e) == "");
  CHECK(e.Get(R"(t_latency_seconds_bucket{endpoint="stripe",le="0.1"})") == 2);  // le is <=
  CHECK(e.Get(R"(t_latency_seconds_bucket{endpoint="stripe",le="1"})") == 3);
  CHECK(e.Get(R"(t_latency_seconds_bucket{endpoint="stripe",le="10"})") == 4);
  CHECK(e.Get(R"(t_latency_seconds_bucket{endpoint="stripe",le="+Inf"})") == 5);
  CHECK(e.Get(R"(t_latency_seconds_count{endpoint="stripe"})") == 5);
  CHECK(e.Get(R"(t_latency_seconds_sum{endpoint="stripe"})") == Approx(22.65));
}

TEST_CASE("gauges are computed at every render") {
  MetricsRegistry r;
  int calls = 0;
  r.AddGauge("t_jobs", "Jobs by status.", {"status"}, [&] {
    ++calls;
    return std::vector<GaugeSample>{{{"pending"}, 3}, {{"dead"}, 0}};
  });
  r.AddGauge("t_age_seconds", "Age.", {}, [] { return std::vector<GaugeSample>{{{}, 1.5}}; });
  auto e = ParsePrometheusText(r.Render());
  REQUIRE(Errors(e) == "");
  CHECK(e.types.at("t_jobs") == "gauge");
  CHECK(e.Get(R"(t_jobs{status="pending"})") == 3);
  CHECK(e.Get(R"(t_jobs{status="dead"})") == 0);
  CHECK(e.Get("t_age_seconds") == 1.5);
  (void)r.Render();
  CHECK(calls == 2);
}

TEST_CASE("sample values use the format's spellings") {
  CHECK(FormatSampleValue(3) == "3");
  CHECK(FormatSampleValue(0.25) == "0.25");
  CHECK(FormatSampleValue(1.0 / 0.0) == "+Inf");
  CHECK(FormatSampleValue(-1.0 / 0.0) == "-Inf");
  CHECK(FormatSampleValue(std::nan("")) == "NaN");
}

TEST_CASE("concurrent recording loses no increment") {
  MetricsRegistry r;
  CounterFamily& c = r.AddCounter("t_total", "Count.", {"worker"});
  HistogramFamily& h = r.AddHistogram("t_seconds", "Latency.", {}, LatencyBuckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        c.With({std::to_string(t % 2)}).Inc();
        h.With({}).Observe(0.003);
      }
    });
  }
  for (auto& t : threads) t.join();
  auto e = ParsePrometheusText(r.Render());
  REQUIRE(Errors(e) == "");
  CHECK(e.Sum("t_total") == 80000);
  CHECK(e.Get("t_seconds_count") == 80000);
}

TEST_CASE("the test parser itself refuses malformed text") {
  for (const char* bad :
       {"metric{a=\"x} 1\n", "metric 1 2 3\n", "1metric 1\n", "metric{a=\"\\q\"} 1\n",
        "metric one\n", "m 1\nm 1\n", "# TYPE m counter\n# TYPE m counter\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_count 2\n"}) {
    INFO(bad);
    CHECK_FALSE(ParsePrometheusText(bad).errors.empty());
  }
}
