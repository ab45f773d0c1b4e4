// Spans for an OpenTelemetry collector (README, "Trace context"): what hookbox did for an
// event — each delivery received, its accept, each handler attempt — encoded as OTLP/HTTP
// JSON (the opentelemetry-proto ExportTraceServiceRequest in its JSON form: ids as hex,
// enums as numbers, 64-bit integers as decimal strings) and POSTed to `tracing.otlp` in
// batches by a thread of its own.
//
// No OpenTelemetry C++ SDK is packaged for Debian 12, and the part hookbox needs is small:
// a span record, its encoding, a bounded queue. Add() never waits for the network: a
// delivery's thread appends to the queue under a mutex and goes on; a full queue drops the
// span; a batch the collector does not take (down, slow past the timeout, an error answer)
// is dropped whole, not retried. Both are counted (hookbox_spans_dropped_total{reason}).
// Traces whose producer asked not to be sampled (traceparent flags without bit 0) are not
// exported at all: the caller checks Sampled().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "base/status.h"

namespace hookbox {

// opentelemetry.proto.trace.v1.Span.SpanKind
enum class SpanKind { kInternal = 1, kServer = 2, kClient = 3 };

struct SpanAttribute {
  std::string key;
  std::variant<std::string, int64_t> value;
};

struct Span {
  std::string trace_id;        // 32 hex digits
  std::string span_id;         // 16 hex digits
  std::string parent_span_id;  // 16 hex digits, or "" for a trace's root
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  std::chrono::system_clock::time_point start, end;
  std::vector<SpanAttribute> attributes;
  bool error = false;  // status ERROR, with `status_message`; else UNSET
  std::string status_message;
};

// What every span of this process shares: the resource's service.name, service.version and
// service.instance.id.
struct SpanResource {
  std::string service_name;
  std::string service_version;
  std::string instance_id;
};

// The body of one export: an ExportTraceServiceRequest in OTLP's JSON encoding.
std::string OtlpTraceJson(const std::vector<Span>& spans, const SpanResource& resource);

// Whether a W3C trace-flags field ("01") has the sampled bit.
bool Sampled(std::string_view flags);

// POSTs one export body to the URL: OK when the collector took it (a 2xx answer).
using SpanSender = std::function<Status(const std::string& url, const std::string& body)>;

class SpanExporter {
 public:
  struct Limits {
    size_t queue = 8192;                       // spans waiting; past it, new ones are dropped
    size_t batch = 512;                        // spans per export at most
    std::chrono::milliseconds interval{1000};  // a partial batch waits at most this long
  };

  SpanExporter() : SpanExporter(Limits{}) {}
  explicit SpanExporter(Limits limits) : limits_(limits) {}
  ~SpanExporter() { Stop(); }
  SpanExporter(const SpanExporter&) = delete;
  SpanExporter& operator=(const SpanExporter&) = delete;

  // Exports to `url` from now on, as `resource`, through `send` ("" url: exports nothing, and
  // what is queued is dropped). The thread starts with the first URL.
  void Configure(std::string url, SpanResource resource, SpanSender send);
  // Whether spans are wanted: one relaxed load, so an accept without tracing pays nothing
  // more than this.
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Queues a span (when enabled); drops and counts it when the queue is full.
  void Add(Span span);
  // Sends what is queued, each batch once, then ends the thread. The daemon's drain calls it;
  // Configure may start it again.
  void Stop();

 private:
  void Run();
  void SendBatch(const std::vector<Span>& batch, std::unique_lock<std::mutex>& lock);

  const Limits limits_;
  std::atomic<bool> enabled_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Span> queue_;
  std::string url_;
  SpanResource resource_;
  SpanSender send_;
  bool stopping_ = false;
  bool failing_ = false;  // the last export failed (logged once until one succeeds); Run's own
  std::thread thread_;
};

// The daemon's exporter, off until `serve` configures it from `tracing:`.
SpanExporter& Spans();

}  // namespace hookbox
