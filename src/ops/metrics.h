// Metrics in the Prometheus text exposition format (0.0.4), without a client library: labelled
// counters, labelled histograms with fixed buckets, and gauges computed at scrape time
// (queue depth is a database question, asked only when someone looks). Recording is lock-cheap:
// a child (one set of label values) is found under a shared lock and then updated with
// atomics; callers on hot paths may keep the returned reference, which lives as long as its
// registry.
//
// Label values are escaped on output (\\, \", \n), so an endpoint name can never break the
// format. Label values must come from bounded sets (endpoint and handler names from the
// config, outcomes, reasons): never event ids, paths or anything a client chooses.
//
// Thread-safe: every method may be called from any thread at the same time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace hookbox {

using LabelValues = std::vector<std::string>;

class Counter final {
 public:
  void Inc(uint64_t by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Histogram final {
 public:
  // `bounds`: ascending upper bounds, without +Inf.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf (== count)
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // not cumulative; +Inf last
  std::atomic<double> sum_{0};
};

// One metric name with its label names, and a child per set of label values.
template <typename Child>
class Family final {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::function<std::unique_ptr<Child>()> make)
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        make_(std::move(make)) {}

  // The child for these label values (as many as label names), created on first use.
  Child& With(const LabelValues& values);

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Calls fn(values, child) for every child, in label order.
  void ForEach(const std::function<void(const LabelValues&, const Child&)>& fn) const;

 private:
  std::string name_, help_;
  std::vector<std::string> label_names_;
  std::function<std::unique_ptr<Child>()> make_;
  mutable std::shared_mutex mu_;  // guards children_ (the map; children update themselves)
  std::map<LabelValues, std::unique_ptr<Child>> children_;
};

using CounterFamily = Family<Counter>;
using HistogramFamily = Family<Histogram>;

// A gauge sample computed at scrape time.
struct GaugeSample {
  LabelValues labels;
  double value = 0;
};

class MetricsRegistry final {
 public:
  CounterFamily& AddCounter(std::string name, std::string help,
                            std::vector<std::string> label_names);
  // `bounds` ascending, without +Inf.
  HistogramFamily& AddHistogram(std::string name, std::string help,
                                std::vector<std::string> label_names, std::vector<double> bounds);
  // `collect` runs at every Render(), on the scraping thread.
  void AddGauge(std::string name, std::string help, std::vector<std::string> label_names,
                std::function<std::vector<GaugeSample>()> collect);

  // Every family, in registration order, as Prometheus text format 0.0.4.
  std::string Render() const;

 private:
  struct Gauge {
    std::string name, help;
    std::vector<std::string> label_names;
    std::function<std::vector<GaugeSample>()> collect;
  };
  struct Entry {
    std::unique_ptr<CounterFamily> counter;
    std::unique_ptr<HistogramFamily> histogram;
    std::vector<double> bounds;  // the histogram's, for its `le` labels
    std::unique_ptr<Gauge> gauge;
  };
  mutable std::mutex mu_;  // guards entries_ (registration is rare; Render copies nothing)
  std::vector<std::unique_ptr<Entry>> entries_;
};

// The text format's escaping: label values escape \, " and newline; HELP escapes \ and
// newline.
std::string EscapeLabelValue(const std::string& value);
std::string EscapeHelp(const std::string& help);
// Sample values: integers without a fraction, others in shortest round-trip form, and
// +Inf / -Inf / NaN as the format spells them.
std::string FormatSampleValue(double value);

// Latency buckets in seconds, from 1 ms to 60 s.
const std::vector<double>& LatencyBuckets();

// ------------------------------------------------------------------------------------------

template <typename Child>
Child& Family<Child>::With(const LabelValues& values) {
  {
    std::shared_lock lock(mu_);
    auto it = children_.find(values);
    if (it != children_.end()) return *it->second;
  }
  std::unique_lock lock(mu_);
  auto& slot = children_[values];
  if (!slot) slot = make_();
  return *slot;
}

template <typename Child>
void Family<Child>::ForEach(const std::function<void(const LabelValues&, const Child&)>& fn) const {
  std::shared_lock lock(mu_);
  for (const auto& [values, child] : children_) fn(values, *child);
}

}  // namespace hookbox
