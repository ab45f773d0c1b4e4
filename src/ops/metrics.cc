// The metrics registry and its text rendering (see metrics.h).
#include "ops/metrics.h"

#include <charconv>
#include <cmath>

namespace hookbox {
namespace {

// {a="x",b="y"} with an optional extra label (the histogram's `le`); "" without labels.
std::string LabelSet(const std::vector<std::string>& names, const LabelValues& values,
                     const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += extra_name + "=\"" + extra_value + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

void Header(std::string& out, const std::string& name, const std::string& help, const char* type) {
  out += "# HELP " + name + " " + EscapeHelp(help) + "\n";
  out += "# TYPE " + name + " " + type + "\n";
}

void RenderCounter(std::string& out, const CounterFamily& f) {
  Header(out, f.name(), f.help(), "counter");
  f.ForEach([&](const LabelValues& values, const Counter& c) {
    out += f.name() + LabelSet(f.label_names(), values) + " " + std::to_string(c.Value()) + "\n";
  });
}

void RenderHistogram(std::string& out, const HistogramFamily& f,
                     const std::vector<double>& bounds) {
  Header(out, f.name(), f.help(), "histogram");
  f.ForEach([&](const LabelValues& values, const Histogram& h) {
    Histogram::Snapshot s = h.Read();
    for (size_t i = 0; i <= bounds.size(); ++i) {
      std::string le = i < bounds.size() ? FormatSampleValue(bounds[i]) : "+Inf";
      out += f.name() + "_bucket" + LabelSet(f.label_names(), values, "le", le) + " " +
             std::to_string(s.cumulative[i]) + "\n";
    }
    out += f.name() + "_sum" + LabelSet(f.label_names(), values) + " " + FormatSampleValue(s.sum) +
           "\n";
    out += f.name() + "_count" + LabelSet(f.label_names(), values) + " " + std::to_string(s.count) +
           "\n";
  });
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.cumulative.reserve(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(total);
  }
  // The count is the +Inf bucket by construction, so a scrape racing an Observe() still
  // shows a consistent histogram (only the sum may lag by that one observation).
  s.count = total;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

CounterFamily& MetricsRegistry::AddCounter(std::string name, std::string help,
                                           std::vector<std::string> label_names) {
  auto entry = std::make_unique<Entry>();
  entry->counter =
      std::make_unique<CounterFamily>(std::move(name), std::move(help), std::move(label_names),
                                      [] { return std::make_unique<Counter>(); });
  std::lock_guard lock(mu_);
  entries_.push_back(std::move(entry));
  return *entries_.back()->counter;
}

HistogramFamily& MetricsRegistry::AddHistogram(std::string name, std::string help,
                                               std::vector<std::string> label_names,
                                               std::vector<double> bounds) {
  auto entry = std::make_unique<Entry>();
  entry->histogram =
      std::make_unique<HistogramFamily>(std::move(name), std::move(help), std::move(label_names),
                                        [bounds] { return std::make_unique<Histogram>(bounds); });
  entry->bounds = std::move(bounds);
  std::lock_guard lock(mu_);
  entries_.push_back(std::move(entry));
  return *entries_.back()->histogram;
}

void MetricsRegistry::AddGauge(std::string name, std::string help,
                               std::vector<std::string> label_names,
                               std::function<std::vector<GaugeSample>()> collect) {
  auto entry = std::make_unique<Entry>();
  entry->gauge = std::make_unique<Gauge>(
      Gauge{std::move(name), std::move(help), std::move(label_names), std::move(collect)});
  std::lock_guard lock(mu_);
  entries_.push_back(std::move(entry));
}

std::string MetricsRegistry::Render() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& e : entries_) {
    if (e->counter) RenderCounter(out, *e->counter);
    if (e->histogram) RenderHistogram(out, *e->histogram, e->bounds);
    if (e->gauge) {
      Header(out, e->gauge->name, e->gauge->help, "gauge");
      for (const GaugeSample& s : e->gauge->collect()) {
        out += e->gauge->name + LabelSet(e->gauge->label_names, s.labels) + " " +
               FormatSampleValue(s.value) + "\n";
      }
    }
  }
  return out;
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                               0.5,   1,      2.5,   5,    10,    30,   60};
  return kBuckets;
}

}  // namespace hookbox
