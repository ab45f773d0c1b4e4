// The alert watch's thread and its two checks, backlog and storage_unavailable (see
// alert_watch.h).
#include "work/alert_watch.h"

#include <algorithm>

#include "ops/daemon_metrics.h"
#include "ops/log.h"
#include "work/alerts.h"
#include "work/liveness.h"

namespace hookbox {
namespace {

double Seconds(std::chrono::system_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// What a backlog alert says of one handler that has waited `waited`.
AlertFacts BacklogFacts(const HandlerStatus& h, const Alert& alert,
                        std::chrono::system_clock::duration waited) {
  AlertFacts facts;
  facts.endpoint = h.state.endpoint;
  facts.handler = h.state.handler;
  const auto waited_s = std::chrono::floor<std::chrono::seconds>(waited);
  facts.detail = std::to_string(h.due) + " due job" + (h.due == 1 ? "" : "s") +
                 ", the oldest waiting " + FormatDuration(waited_s) + " (backlog_age " +
                 FormatDuration(alert.backlog_age) + ")";
  facts.fields["due"] = h.due;
  facts.fields["oldest_due_at"] = h.oldest_due;
  facts.fields["waited_seconds"] = Seconds(waited);
  facts.fields["backlog_age_seconds"] = Seconds(alert.backlog_age);
  return facts;
}

}  // namespace

AlertWatch::AlertWatch(HandlerStates& states, EventStore& events,
                       std::shared_ptr<const Config> config,
                       std::shared_ptr<const HandlerSet> handlers, const Clock& clock,
                       std::function<std::string()> storage_problem)
    : states_(states),
      events_(events),
      clock_(clock),
      storage_problem_(std::move(storage_problem)),
      config_(std::move(config)),
      handlers_(std::move(handlers)) {}

AlertWatch::~AlertWatch() { Stop(); }

void AlertWatch::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void AlertWatch::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AlertWatch::Swap(std::shared_ptr<const Config> config,
                      std::shared_ptr<const HandlerSet> handlers) {
  std::lock_guard lock(mu_);
  config_ = std::move(config);
  handlers_ = std::move(handlers);
}

std::optional<Duration> AlertWatch::BacklogInterval(const Config& config) {
  std::optional<Duration> smallest;
  for (const Alert& alert : config.alerts) {
    if (!Wants(alert, AlertCondition::kBacklog)) continue;
    smallest = std::min(smallest.value_or(alert.backlog_age), alert.backlog_age);
  }
  if (!smallest) return std::nullopt;
  return std::clamp<Duration>(*smallest / 4, std::chrono::seconds(1), std::chrono::seconds(30));
}

void AlertWatch::Tick(TimePoint now) {
  std::shared_ptr<const Config> config;
  std::shared_ptr<const HandlerSet> handlers;
  {
    std::lock_guard lock(mu_);
    config = config_;
    handlers = handlers_;
  }
  CheckStorage(*config, *handlers, now);
  const std::optional<Duration> interval = BacklogInterval(*config);
  if (interval && now >= next_backlog_check_) {
    next_backlog_check_ = now + *interval;
    CheckBacklog(*config, now);
  }
}

void AlertWatch::CheckBacklog(const Config& config, TimePoint now) {
  // A failing read is storage's to report (the claims and accepts beside it are recorded);
  // the next check asks again.
  StatusOr<std::vector<HandlerStatus>> all = states_.Handlers(now, /*count_jobs=*/true);
  if (!all.ok()) return;
  for (const Alert& alert : config.alerts) {
    if (!Wants(alert, AlertCondition::kBacklog)) continue;
    for (const HandlerStatus& h : *all) {
      if (h.oldest_due.empty() || h.state.paused) continue;
      const std::optional<int64_t> micros = ParseRfc3339Micros(h.oldest_due);
      if (!micros) continue;
      const auto waited = now - TimePoint(std::chrono::microseconds(*micros));
      if (waited < alert.backlog_age) continue;
      (void)RaiseAlert(events_, alert, AlertCondition::kBacklog, BacklogFacts(h, alert, waited),
                       now);
    }
  }
}

void AlertWatch::CheckStorage(const Config& config, const HandlerSet& handlers, TimePoint now) {
  const std::string problem = storage_problem_();
  for (const Alert& alert : config.alerts) {
    if (!Wants(alert, AlertCondition::kStorageUnavailable)) continue;
    Sending& sending = sending_[alert.name];
    if (problem.empty()) {
      // Storage is back: the next failure's alert goes out at once (in a new window).
      sending.tries = 0;
      sending.next_try = {};
      continue;
    }
    if (sending.sent_window == AlertWindow(alert, now) || now < sending.next_try) continue;
    Handler* target = handlers.Find(std::string(kAlertsEndpoint), alert.name);
    if (target != nullptr) SendStorageAlert(alert, *target, problem, now, sending);
  }
}

void AlertWatch::SendStorageAlert(const Alert& alert, Handler& target, const std::string& problem,
                                  TimePoint now, Sending& sending) {
  const char* condition = AlertConditionName(AlertCondition::kStorageUnavailable);
  AlertFacts facts;
  facts.detail =
      problem + "; sent from memory by " + InstanceId() + " (storage cannot hold this alert)";
  facts.fields["instance"] = InstanceId();
  const TimePoint window = AlertWindow(alert, now);
  const std::string id = AlertId(alert, AlertCondition::kStorageUnavailable, InstanceId(), now);
  const HandlerResult result = target.Run(AlertEvent(alert, condition, facts, now, id));
  Metrics()
      .attempts.With({std::string(kAlertsEndpoint), alert.name, OutcomeName(result.outcome)})
      .Inc();
  if (result.outcome == Outcome::kOk) {
    sending = {.sent_window = window, .next_try = {}, .tries = 0};
    LogInfo({{"msg", "alert sent"}, {"alert", alert.name}, {"condition", condition}, {"id", id}});
    return;
  }
  ++sending.tries;
  const auto backoff = std::min<std::chrono::seconds>(
      std::chrono::seconds(int64_t{1} << std::min(sending.tries - 1, 6)), std::chrono::seconds(60));
  sending.next_try = now + backoff;
  LogWarn({{"msg", "alert not sent; trying again"},
           {"alert", alert.name},
           {"condition", condition},
           {"outcome", OutcomeName(result.outcome)},
           {"detail", result.detail.substr(0, 512)},
           {"retry_in_seconds", backoff.count()}});
}

void AlertWatch::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    Tick(clock_.Now());
    lock.lock();
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
  }
}

}  // namespace hookbox
