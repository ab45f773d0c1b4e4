// Spans as OTLP/HTTP JSON, and the thread that exports them (see spans.h).
#include "ops/spans.h"

#include "ops/daemon_metrics.h"
#include "ops/log.h"

namespace hookbox {
namespace {

// The encoding is written straight into one string (AppendJsonString for every text):
// building nlohmann values for each span and dumping them cost an exported delivery more
// than its accept did (bench/RESULTS.md, "Trace context").

// fixed64 nanoseconds since the Unix epoch, as the JSON encoding writes 64-bit integers.
void AppendUnixNanos(std::string& out, std::chrono::system_clock::time_point t) {
  out += '"';
  out += std::to_string(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  out += '"';
}

// A KeyValue with a string or an int value (an int64 as a decimal string).
void AppendAttribute(std::string& out, std::string_view key,
                     const std::variant<std::string, int64_t>& value) {
  out += "{\"key\":";
  AppendJsonString(out, key);
  if (const auto* text = std::get_if<std::string>(&value)) {
    out += ",\"value\":{\"stringValue\":";
    AppendJsonString(out, *text);
  } else {
    out += ",\"value\":{\"intValue\":\"";
    out += std::to_string(std::get<int64_t>(value));
    out += '"';
  }
  out += "}}";
}

void AppendSpan(std::string& out, const Span& s) {
  out += "{\"traceId\":";
  AppendJsonString(out, s.trace_id);
  out += ",\"spanId\":";
  AppendJsonString(out, s.span_id);
  if (!s.parent_span_id.empty()) {
    out += ",\"parentSpanId\":";
    AppendJsonString(out, s.parent_span_id);
  }
  out += ",\"name\":";
  AppendJsonString(out, s.name);
  out += ",\"kind\":";
  out += std::to_string(static_cast<int>(s.kind));
  out += ",\"startTimeUnixNano\":";
  AppendUnixNanos(out, s.start);
  out += ",\"endTimeUnixNano\":";
  AppendUnixNanos(out, s.end);
  out += ",\"attributes\":[";
  for (size_t i = 0; i < s.attributes.size(); ++i) {
    if (i) out += ',';
    AppendAttribute(out, s.attributes[i].key, s.attributes[i].value);
  }
  out += ']';
  // Status: UNSET (0, left out) unless an error (2), whose message says what failed.
  if (s.error) {
    out += ",\"status\":{\"code\":2,\"message\":";
    AppendJsonString(out, s.status_message);
    out += '}';
  }
  out += '}';
}

}  // namespace

std::string OtlpTraceJson(const std::vector<Span>& spans, const SpanResource& resource) {
  std::string out = "{\"resourceSpans\":[{\"resource\":{\"attributes\":[";
  AppendAttribute(out, "service.name", resource.service_name);
  if (!resource.service_version.empty()) {
    out += ',';
    AppendAttribute(out, "service.version", resource.service_version);
  }
  if (!resource.instance_id.empty()) {
    out += ',';
    AppendAttribute(out, "service.instance.id", resource.instance_id);
  }
  out += "]},\"scopeSpans\":[{\"scope\":{\"name\":\"hookbox\"";
  if (!resource.service_version.empty()) {
    out += ",\"version\":";
    AppendJsonString(out, resource.service_version);
  }
  out += "},\"spans\":[";
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i) out += ',';
    AppendSpan(out, spans[i]);
  }
  out += "]}]}]}";
  return out;
}

bool Sampled(std::string_view flags) {
  // Lowercase hex, as ParseTraceparent admits it; bit 0 is in the last digit.
  if (flags.size() != 2) return false;
  const char c = flags[1];
  const int value = c >= 'a' ? c - 'a' + 10 : c - '0';
  return (value & 1) != 0;
}

void SpanExporter::Configure(std::string url, SpanResource resource, SpanSender send) {
  std::unique_lock lock(mu_);
  url_ = std::move(url);
  resource_ = std::move(resource);
  send_ = std::move(send);
  enabled_.store(!url_.empty(), std::memory_order_relaxed);
  if (url_.empty()) {
    queue_.clear();
    return;
  }
  if (!thread_.joinable()) {
    stopping_ = false;
    thread_ = std::thread([this] { Run(); });
  }
}

void SpanExporter::Add(Span span) {
  if (!enabled()) return;
  std::unique_lock lock(mu_);
  if (url_.empty()) return;
  if (queue_.size() >= limits_.queue) {
    lock.unlock();
    Metrics().spans_dropped.With({"queue_full"}).Inc();
    return;
  }
  queue_.push_back(std::move(span));
  if (queue_.size() >= limits_.batch) wake_.notify_one();
}

void SpanExporter::Stop() {
  {
    std::unique_lock lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    enabled_.store(false, std::memory_order_relaxed);
  }
  wake_.notify_one();
  thread_.join();
  std::unique_lock lock(mu_);
  thread_ = std::thread();
}

void SpanExporter::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait_for(lock, limits_.interval,
                   [this] { return stopping_ || queue_.size() >= limits_.batch; });
    // At a stop, everything queued goes, batch by batch, until one fails.
    while (!queue_.empty()) {
      const size_t n = std::min(queue_.size(), limits_.batch);
      std::vector<Span> batch(std::make_move_iterator(queue_.begin()),
                              std::make_move_iterator(queue_.begin() + static_cast<long>(n)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<long>(n));
      SendBatch(batch, lock);
      if (!stopping_ && queue_.size() < limits_.batch) break;
      if (stopping_ && failing_) {
        Metrics().spans_dropped.With({"export_failed"}).Inc(queue_.size());
        queue_.clear();
      }
    }
    if (stopping_) return;
  }
}

// Encodes and sends one batch with the lock released (Add goes on meanwhile); counts it.
void SpanExporter::SendBatch(const std::vector<Span>& batch, std::unique_lock<std::mutex>& lock) {
  const std::string url = url_;
  const SpanResource resource = resource_;
  const SpanSender send = send_;
  lock.unlock();
  const Status sent =
      send ? send(url, OtlpTraceJson(batch, resource)) : Status::Unavailable("no sender", url);
  const uint64_t count = batch.size();
  if (sent.ok()) {
    Metrics().spans_exported.With({}).Inc(count);
  } else {
    Metrics().spans_dropped.With({"export_failed"}).Inc(count);
  }
  // One line when exports start failing and one when they work again, not one a batch.
  if (!sent.ok() && !failing_) {
    LogWarn({{"msg", "spans dropped: the OTLP collector did not take them; dropping until it does"},
             {"url", url},
             {"error", sent.ToString()}});
  } else if (sent.ok() && failing_) {
    LogInfo({{"msg", "spans exported again"}, {"url", url}});
  }
  failing_ = !sent.ok();
  lock.lock();
}

SpanExporter& Spans() {
  static SpanExporter exporter;
  return exporter;
}

}  // namespace hookbox
