// One attempt of one claimed job (see attempt.h).
#include "work/attempt.h"

#include <random>

#include "base/trace.h"
#include "ops/daemon_metrics.h"
#include "ops/log.h"
#include "ops/spans.h"
#include "work/backoff.h"

namespace hookbox {

namespace {

// What a lease adds to the handler's timeout: time for the finish to commit. Handlers are
// killed at their timeout, so a lease outlives its attempt.
constexpr std::chrono::milliseconds kLeaseMargin = std::chrono::seconds(30);

const char* NextName(JobOutcome::Next next) {
  switch (next) {
    case JobOutcome::Next::kDone:
      return "done";
    case JobOutcome::Next::kRetry:
      return "retry";
    case JobOutcome::Next::kDead:
      return "dead";
  }
  return "?";
}

JobOutcome Decide(const HandlerResult& result, const ClaimedJob& job, const RetryPolicy& policy,
                  TimePoint now, AttemptMode mode) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  JobOutcome o = DecideNext(result, job.budget_used, policy, now, rng);
  if (mode == AttemptMode::kSync &&
      (result.outcome == Outcome::kFailed || result.outcome == Outcome::kTimeout)) {
    // The producer retries a 500 on its own schedule: the job is free for that retry now.
    o.next = JobOutcome::Next::kRetry;
    o.next_attempt_at = now;
  }
  return o;
}

// tracing.otlp: the attempt's span (ops/spans.h), a child of the accept that stored the
// event (receive/delivery_spans.h). Its id is the one the handler was given as its parent.
void ExportAttemptSpan(const ClaimedJob& job, const JobOutcome& outcome, const char* next,
                       double seconds) {
  auto trace = ParseTraceparent(job.event.traceparent);
  if (!trace || !Sampled(trace->flags)) return;
  Span span;
  span.trace_id = std::move(trace->trace_id);
  span.span_id = std::move(trace->parent_id);
  span.parent_span_id = AcceptSpanId(job.event.endpoint, job.event.event_id);
  span.name = "attempt " + job.handler;
  span.kind = SpanKind::kClient;
  span.end = std::chrono::system_clock::now();
  span.start = span.end - std::chrono::duration_cast<std::chrono::system_clock::duration>(
                              std::chrono::duration<double>(seconds));
  span.attributes = {{"hookbox.endpoint", job.event.endpoint},
                     {"hookbox.event_id", job.event.event_id},
                     {"hookbox.handler", job.handler},
                     {"hookbox.attempt", int64_t{job.event.attempt}},
                     {"hookbox.outcome", std::string(OutcomeName(outcome.outcome))},
                     {"hookbox.next", std::string(next)}};
  if (outcome.outcome != Outcome::kOk) {
    span.error = true;
    span.status_message = outcome.detail.substr(0, 512);
  }
  Spans().Add(std::move(span));
}

}  // namespace

std::chrono::milliseconds LeaseFor(const HandlerSet& handlers) {
  return handlers.longest_timeout + kLeaseMargin;
}

std::chrono::milliseconds LeaseFor(const Handler* handler) {
  return (handler ? handler->timeout() : std::chrono::milliseconds(0)) + kLeaseMargin;
}

FinishRequest Conclude(const ClaimedJob& job, const HandlerResult& result, const Handler* handler,
                       const Config& config, const Clock& clock, AttemptMode mode) {
  const Endpoint* endpoint = config.FindByName(job.event.endpoint);
  const RetryPolicy policy = endpoint ? endpoint->retry : RetryPolicy{};
  const TimePoint now = clock.Now();
  FinishRequest f;
  f.job = &job;
  f.outcome = Decide(result, job, policy, now, mode);
  if (handler && handler->transactional()) {
    f.work = handler->transactional();
    f.work_failed = Decide({Outcome::kFailed, "", {}}, job, policy, now, mode);
  }
  return f;
}

StatusOr<JobOutcome> Report(const FinishRequest& finish, const StatusOr<Outcome>& recorded,
                            double seconds, AttemptMode mode) {
  const ClaimedJob& job = *finish.job;
  JobOutcome outcome = finish.outcome;
  if (finish.work && recorded.ok() && *recorded != Outcome::kOk) {
    outcome = finish.work_failed;
    outcome.detail = std::string(finish.work->kind()) + " work failed (see the attempt's detail)";
  }
  nlohmann::json log = {{"msg", "attempt"},
                        {"endpoint", job.event.endpoint},
                        {"event_id", job.event.event_id},
                        {"handler", job.handler},
                        {"attempt", job.event.attempt},
                        {"outcome", OutcomeName(outcome.outcome)},
                        {"latency_ms", seconds * 1000}};
  if (auto trace = ParseTraceparent(job.event.traceparent)) {
    log["trace_id"] = trace->trace_id;
    log["span_id"] = trace->parent_id;  // the attempt's own span, its handler's parent
  }
  // Counted whether or not the result could be recorded: the handler ran either way.
  const LabelValues labels = {job.event.endpoint, job.handler, OutcomeName(outcome.outcome)};
  Metrics().attempts.With(labels).Inc();
  Metrics().handler_latency.With(labels).Observe(seconds);
  if (outcome.refund_try) {
    // The handler never started (no descriptors or processes left): the daemon's problem,
    // not the handler's; the job is retried soon, its attempt budget untouched.
    Metrics().handler_infra_failures.With({job.event.endpoint, job.handler}).Inc();
    log["infrastructure"] = true;
  }
  if (!recorded.ok()) {
    log["error"] = recorded.status().ToString();
    log["result"] = "discarded";
    LogWarn(log);
    if (Spans().enabled()) ExportAttemptSpan(job, outcome, "discarded", seconds);
    return recorded.status();
  }
  log["next"] = NextName(outcome.next);
  if (outcome.outcome != Outcome::kOk) log["detail"] = outcome.detail.substr(0, 512);
  if (outcome.next == JobOutcome::Next::kRetry && mode == AttemptMode::kPool) {
    log["next_attempt_at"] = FormatTime(outcome.next_attempt_at);
  }
  if (Spans().enabled()) ExportAttemptSpan(job, outcome, NextName(outcome.next), seconds);
  // A job going dead needs someone (an error); a retry is routine (a warning).
  if (outcome.outcome == Outcome::kOk) {
    LogInfo(log);
  } else if (outcome.next == JobOutcome::Next::kDead) {
    LogError(log);
  } else {
    LogWarn(log);
  }
  return outcome;
}

StatusOr<JobOutcome> RunAttempt(JobQueue& jobs, const ClaimedJob& job, const Config& config,
                                const HandlerSet& handlers, const Clock& clock, AttemptMode mode) {
  Handler* handler = handlers.Find(job.event.endpoint, job.handler);
  if (!handler) {
    // A takeover under a config that no longer has the handler: the job is held, as the
    // dispatcher holds it (work/held.h), never run by another handler nor made dead.
    Status held = jobs.HoldForHandler({job}, clock.Now());
    LogWarn({{"msg", "job held: its handler is not configured"},
             {"endpoint", job.event.endpoint},
             {"event_id", job.event.event_id},
             {"handler", job.handler},
             {"error", held.ok() ? std::string() : held.ToString()}});
    if (!held.ok()) return held;
    return Status::NotFound("handler " + job.handler + " is not configured; its job is held",
                            job.event.endpoint);
  }
  const auto started = std::chrono::steady_clock::now();
  HandlerResult result;
  if (!handler->transactional()) result = handler->Run(job.event);
  FinishRequest finish = Conclude(job, result, handler, config, clock, mode);
  StatusOr<Outcome> recorded =
      jobs.FinishJob(job, finish.outcome, finish.work, finish.work ? &finish.work_failed : nullptr);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return Report(finish, recorded, seconds, mode);
}

}  // namespace hookbox
