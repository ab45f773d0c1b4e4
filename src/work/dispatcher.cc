// The dispatcher: claim in batches, run with per-handler concurrency, finish in batches
// (see dispatcher.h).
#include "work/dispatcher.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "ops/daemon_metrics.h"
#include "ops/log.h"
#include "ops/storage_health.h"
#include "work/alerts.h"
#include "work/attempt.h"
#include "work/held.h"
#include "work/liveness.h"

namespace hookbox {
namespace {

constexpr std::chrono::milliseconds kPoll{250};  // an idle dispatcher looks this often
constexpr std::chrono::milliseconds kStorageBackoff{1000};
// How often held jobs of the handlers this process has are released: besides start and
// reload, for the replicas of a rolling change (one without the handler may hold a job that
// another has).
constexpr std::chrono::seconds kReleaseHeldEvery{60};

// What a batch of finishes says of the storage: its first fault (IsStorageFault: not a lost
// lease, not a row gone), else Ok, so one batch is one line and one count.
Status StorageFault(const std::vector<StatusOr<Outcome>>& recorded) {
  for (const auto& r : recorded) {
    if (IsStorageFault(r.status())) return r.status();
  }
  return Status::Ok();
}

// One line and one count per circuit transition (DESIGN.md, "Handler state").
void ReportTransition(const CircuitTransition& t) {
  Metrics().circuit_transitions.With({t.endpoint, t.handler, CircuitName(t.to)}).Inc();
  const std::string msg = t.to == Circuit::kOpen       ? "circuit opened: handler held"
                          : t.to == Circuit::kHalfOpen ? "circuit half-open: one probe attempt"
                                                       : "circuit closed: handler runs again";
  auto log = t.to == Circuit::kOpen ? LogWarn : LogInfo;
  log({{"msg", msg},
       {"endpoint", t.endpoint},
       {"handler", t.handler},
       {"from", CircuitName(t.from)},
       {"to", CircuitName(t.to)},
       {"failures", std::to_string(t.failures)}});
}

// A claimed job's metric of its wait on a rate, and a probe's transition.
void ReportClaimed(const ClaimedJob& job, TimePoint now) {
  if (job.rate_due_at) {
    Metrics()
        .rate_wait.With({job.event.endpoint, job.handler})
        .Observe(std::max(0.0, std::chrono::duration<double>(now - *job.rate_due_at).count()));
  }
  if (job.probe) {
    ReportTransition({job.event.endpoint, job.handler, Circuit::kOpen, Circuit::kHalfOpen, 0});
  }
}

}  // namespace

std::shared_ptr<const Dispatcher::Controls> Dispatcher::ControlsOf(const Config& config) {
  auto c = std::make_shared<Controls>();
  for (const Endpoint& ep : config.endpoints) {
    if (ep.mode == Mode::kSync) continue;  // the loader refuses rate and circuit there
    for (const Route& route : ep.routes) {
      for (const HandlerSpec& spec : route.handlers) {
        const std::string key = ep.name + "\n" + spec.name;
        if (spec.rate_per_second > 0 &&
            std::none_of(c->limits.rates.begin(), c->limits.rates.end(), [&](const auto& r) {
              return r.endpoint == ep.name && r.handler == spec.name;
            })) {
          c->limits.rates.push_back({ep.name, spec.name, spec.rate_per_second});
        }
        if (spec.circuit_failures > 0) {
          c->circuits[key] = CircuitLimit{spec.circuit_failures, spec.circuit_cooldown};
        }
      }
    }
  }
  return c;
}

// A handler configured without `circuit:` (removed by a reload, say) is never held by one:
// a circuit its state row keeps open or half-open, which the claim would go on honouring,
// closes at load (DESIGN.md, "Handler state"). The state rows alone are read.
void Dispatcher::CloseUnconfiguredCircuits(const Config& config, const Controls& controls) {
  const TimePoint now = clock_.Now();
  auto states = states_.Handlers(now, /*count_jobs=*/false);
  if (!states.ok()) return;  // the claim goes on honouring it until the next load
  for (const HandlerStatus& h : *states) {
    const HandlerState& st = h.state;
    if (st.circuit == Circuit::kClosed && st.failures == 0) continue;
    if (controls.circuits.count(st.endpoint + "\n" + st.handler)) continue;
    const Endpoint* ep = config.FindByName(st.endpoint);
    if (!ep || ep->mode == Mode::kSync ||
        std::none_of(ep->routes.begin(), ep->routes.end(), [&](const Route& r) {
          return std::any_of(r.handlers.begin(), r.handlers.end(),
                             [&](const HandlerSpec& spec) { return spec.name == st.handler; });
        })) {
      continue;  // not a handler this config runs: its state is not this config's to change
    }
    auto t = states_.RecordCircuit({st.endpoint, st.handler}, Outcome::kOk, CircuitLimit{}, now);
    if (!t.ok()) {
      LogError({{"msg", "cannot close the circuit of a handler configured without one"},
                {"endpoint", st.endpoint},
                {"handler", st.handler},
                {"error", t.status().ToString()}});
    } else if (*t) {
      LogInfo({{"msg", "the config has no circuit for this handler: its circuit closes"},
               {"endpoint", st.endpoint},
               {"handler", st.handler}});
      ReportTransition(**t);
    }
  }
}

// One claimed job, from its claim until its finish is recorded. The config and handlers it
// was claimed under stay alive with it, whatever a reload swaps in meanwhile.
struct Dispatcher::Attempt {
  ClaimedJob job;
  std::shared_ptr<const Config> config;
  std::shared_ptr<const HandlerSet> handlers;
  Handler* handler = nullptr;
  std::string key;  // "<endpoint>\n<handler>"
  std::chrono::steady_clock::time_point started;
  HandlerResult result;
};

Dispatcher::Dispatcher(JobQueue& jobs, HandlerStates& states, EventStore& alerts,
                       std::shared_ptr<const Config> config,
                       std::shared_ptr<const HandlerSet> handlers, const Clock& clock)
    : jobs_(jobs),
      states_(states),
      alerts_(alerts),
      clock_(clock),
      owner_(LeaseOwnerPrefix() + "dispatcher"),
      config_(std::move(config)),
      handlers_(std::move(handlers)),
      controls_(ControlsOf(*config_)) {}

Dispatcher::~Dispatcher() { Stop(std::chrono::hours(1)); }

void Dispatcher::Start(bool enabled) {
  CloseUnconfiguredCircuits(*config_, *controls_);
  ReleaseHeldJobs(jobs_, *config_, clock_.Now());
  released_held_at_ = std::chrono::steady_clock::now();
  if (enabled) thread_ = std::thread([this] { Loop(); });
}

void Dispatcher::Wake() {
  {
    std::lock_guard lock(mu_);
    ++wake_seq_;
  }
  cv_.notify_all();
}

bool Dispatcher::Stop(std::chrono::milliseconds grace) {
  std::unique_lock lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  blocking_cv_.notify_all();
  if (!stopped_cv_.wait_for(lock, grace, [this] { return attempts_.empty(); })) return false;
  lock.unlock();
  if (thread_.joinable()) thread_.join();
  for (std::thread& t : blocking_threads_) {
    if (t.joinable()) t.join();
  }
  blocking_threads_.clear();
  return true;
}

void Dispatcher::Swap(std::shared_ptr<const Config> config,
                      std::shared_ptr<const HandlerSet> handlers) {
  std::shared_ptr<const Config> now_configured = config;
  std::shared_ptr<const Controls> controls = ControlsOf(*config);
  {
    std::lock_guard lock(mu_);
    config_ = std::move(config);
    handlers_ = std::move(handlers);
    controls_ = controls;
  }
  CloseUnconfiguredCircuits(*now_configured, *controls);
  ReleaseHeldJobs(jobs_, *now_configured, clock_.Now());
  Wake();
}

void Dispatcher::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (stopping_ && attempts_.empty()) break;
    const uint64_t seen = wake_seq_;
    std::vector<Attempt*> batch;
    batch.swap(ended_);
    lock.unlock();
    bool progress = !batch.empty();
    if (!batch.empty()) FinishBatch(batch);
    progress = Claim() || progress;
    if (std::chrono::steady_clock::now() - released_held_at_ >= kReleaseHeldEvery) {
      released_held_at_ = std::chrono::steady_clock::now();
      std::shared_ptr<const Config> config;
      {
        std::lock_guard config_lock(mu_);
        config = config_;
      }
      ReleaseHeldJobs(jobs_, *config, clock_.Now());
    }
    lock.lock();
    if (!progress && ended_.empty()) {
      cv_.wait_for(lock, kPoll, [&] { return stopping_ || !ended_.empty() || wake_seq_ != seen; });
    }
  }
  lock.unlock();
  stopped_cv_.notify_all();
}

// Each handler's free slots (its concurrency less the attempts it runs), into `slots`; their
// sum. Called under mu_.
int Dispatcher::FreeSlots(const HandlerSet& handlers, std::vector<HandlerSlots>* slots) const {
  int free = 0;
  for (const auto& [endpoint, by_name] : handlers.by_endpoint) {
    for (const auto& [name, handler] : by_name) {
      auto running = running_.find(endpoint + "\n" + name);
      const int n =
          std::max(0, handler->concurrency() - (running == running_.end() ? 0 : running->second));
      slots->push_back({endpoint, name, n});
      free += n;
    }
  }
  return free;
}

// Each handler its own lane: the claim takes, of each handler, at most its free slots (its
// concurrency less what it runs), so every job claimed begins at once. No claimed job waits
// in memory for a slot, holding a lease and a try while a pause, an open circuit or a crash
// overtakes it, and no handler's backlog keeps the claim from another handler's jobs.
bool Dispatcher::Claim() {
  std::shared_ptr<const HandlerSet> handlers;
  std::shared_ptr<const Controls> controls;
  ClaimLimits limits;
  int free = 0;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    handlers = handlers_;
    controls = controls_;
    limits.rates = controls->limits.rates;
    free = FreeSlots(*handlers, &limits.slots);
  }
  if (free <= 0) return false;
  const std::chrono::milliseconds lease = LeaseFor(*handlers);
  const TimePoint now = clock_.Now();
  auto claimed = jobs_.ClaimJobs(owner_, std::min(free, kMaxClaim), now, lease, limits);
  // A fault is an error line and a count (ops/storage_health.h); contention is quiet.
  Storage().Record(kStorageClaim, claimed.status());
  if (!claimed.ok()) {
    std::this_thread::sleep_for(kStorageBackoff);  // storage is down: don't spin
    return false;
  }
  if (!claimed->empty() && CurrentLogLevel() == LogLevel::kDebug) {
    LogDebug({{"msg", "claimed"},
              {"jobs", claimed->size()},
              {"lease_ms", lease.count()},
              {"free_slots", free}});
  }
  // The config the attempts begin under is the one loaded now: a reload that came during
  // the claim applies to them, and one that removed their handler holds their jobs.
  std::shared_ptr<const Config> config;
  {
    std::lock_guard lock(mu_);
    config = config_;
    // Unless the new config's longest timeout outlasts the lease just taken: then these
    // attempts run with the handlers they were claimed for (the next claim uses the new).
    if (handlers_ == handlers || LeaseFor(*handlers_) <= lease) handlers = handlers_;
  }
  std::vector<ClaimedJob> unconfigured;
  for (ClaimedJob& job : *claimed) {
    ReportClaimed(job, now);
    Handler* handler = handlers->Find(job.event.endpoint, job.handler);
    if (!handler) {
      unconfigured.push_back(std::move(job));
      continue;
    }
    auto a = std::make_unique<Attempt>();
    a->handler = handler;
    a->key = job.event.endpoint + "\n" + job.handler;
    a->job = std::move(job);
    a->config = config;
    a->handlers = handlers;
    Launch(std::move(a));
  }
  if (!unconfigured.empty()) Hold(unconfigured, now);
  return !claimed->empty();
}

// Jobs of a handler this process does not have (renamed or removed from the config; or
// configured on another replica only): given back held, never run by another handler and
// never made dead for it (held.h). If the hold cannot be written, their leases run out and
// the next claim holds them.
void Dispatcher::Hold(const std::vector<ClaimedJob>& jobs, TimePoint now) {
  Status s = jobs_.HoldForHandler(jobs, now);
  for (const ClaimedJob& job : jobs) {
    nlohmann::json line = {{"msg", s.ok() ? "job held: its handler is not configured"
                                          : "cannot hold a job whose handler is not configured"},
                           {"endpoint", job.event.endpoint},
                           {"event_id", job.event.event_id},
                           {"handler", job.handler}};
    if (!s.ok()) line["error"] = s.ToString();
    LogWarn(line);
  }
  if (!s.ok()) return;
  // `alerts:` handler_held (work/alerts.h): once per handler of the batch (the alert's
  // repeat window makes it once per window however many batches hold its jobs).
  std::shared_ptr<const Config> config;
  {
    std::lock_guard lock(mu_);
    config = config_;
  }
  if (config->alerts.empty()) return;
  std::set<std::pair<std::string, std::string>> handlers;
  for (const ClaimedJob& job : jobs) {
    if (!handlers.emplace(job.event.endpoint, job.handler).second) continue;
    AlertFacts facts{.endpoint = job.event.endpoint,
                     .handler = job.handler,
                     .event_id = job.event.event_id,
                     .detail =
                         "jobs held: no handler of this name is configured (renamed or "
                         "removed); they wait until it is, or `inbox reassign` moves them"};
    (void)RaiseAlerts(alerts_, *config, AlertCondition::kHandlerHeld, facts, now);
  }
}

void Dispatcher::Launch(std::unique_ptr<Attempt> owned) {
  Attempt* a = owned.get();
  {
    std::lock_guard lock(mu_);
    attempts_.emplace(a, std::move(owned));
    ++running_[a->key];
  }
  a->started = std::chrono::steady_clock::now();
  if (a->handler->transactional()) return Ended(a, {});  // it runs in the finish
  if (a->handler->Start(a->job.event, [this, a](HandlerResult r) { Ended(a, std::move(r)); })) {
    return;
  }
  std::lock_guard lock(mu_);
  blocking_.push_back(a);
  if (blocking_idle_ > 0) {
    blocking_cv_.notify_one();
  } else {
    blocking_threads_.emplace_back([this] { BlockingThread(); });
  }
}

// Called on whichever thread the attempt ended on (the child watch's, a blocking thread,
// the dispatcher's): it only hands over, so that children are started by the dispatcher.
void Dispatcher::Ended(Attempt* a, HandlerResult result) {
  std::lock_guard lock(mu_);
  a->result = std::move(result);
  ended_.push_back(a);
  --running_[a->key];  // its slot is free for the next claim
  // Under the lock: once the dispatcher sees this attempt ended it may finish it, stop and
  // be destroyed (shutdown), so this thread must not touch cv_ after unlocking (TSan saw
  // the notify race the condition variable's destruction).
  cv_.notify_all();
}

void Dispatcher::FinishBatch(std::vector<Attempt*>& batch) {
  std::vector<FinishRequest> finishes;
  finishes.reserve(batch.size());
  for (Attempt* a : batch) {
    finishes.push_back(
        Conclude(a->job, a->result, a->handler, *a->config, clock_, AttemptMode::kPool));
  }
  std::vector<StatusOr<Outcome>> recorded = jobs_.FinishJobs(finishes);
  Storage().Record(kStorageFinish, StorageFault(recorded));
  RecordCircuits(batch, recorded);
  const auto now = std::chrono::steady_clock::now();
  bool storage_down = false;
  for (size_t i = 0; i < batch.size(); ++i) {
    const double seconds = std::chrono::duration<double>(now - batch[i]->started).count();
    auto done = Report(finishes[i], recorded[i], seconds, AttemptMode::kPool);
    storage_down |= !done.ok() && done.status().code() == Status::Code::kUnavailable;
    if (done.ok() && done->next == JobOutcome::Next::kDead) AlertDead(*batch[i], *done);
  }
  {
    std::lock_guard lock(mu_);
    for (Attempt* a : batch) attempts_.erase(a);
    if (attempts_.empty()) stopped_cv_.notify_all();
  }
  if (storage_down) std::this_thread::sleep_for(kStorageBackoff);  // don't spin
}

// `alerts:` job_dead (work/alerts.h): the job is dead, recorded. An alert that cannot be
// stored is logged (RaiseAlerts); the job's death is in the inbox either way.
void Dispatcher::AlertDead(const Attempt& a, const JobOutcome& outcome) {
  if (a.config->alerts.empty()) return;
  AlertFacts facts{.endpoint = a.job.event.endpoint,
                   .handler = a.job.handler,
                   .event_id = a.job.event.event_id,
                   .detail = outcome.detail.substr(0, 512)};
  facts.fields["attempts"] = a.job.event.attempt;
  facts.fields["outcome"] = OutcomeName(outcome.outcome);
  (void)RaiseAlerts(alerts_, *a.config, AlertCondition::kJobDead, facts, clock_.Now());
}

// Only attempts whose finish was recorded count (a lost lease's result is nobody's), and
// only for handlers with a `circuit:`. A failure to write the count is logged and the
// count misses one attempt: the breaker is a guard, not a ledger.
void Dispatcher::RecordCircuits(const std::vector<Attempt*>& batch,
                                const std::vector<StatusOr<Outcome>>& recorded) {
  std::shared_ptr<const Controls> controls;
  {
    std::lock_guard lock(mu_);
    controls = controls_;
  }
  if (controls->circuits.empty()) return;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto c = controls->circuits.find(batch[i]->key);
    // An attempt the daemon could not start (infrastructure) says nothing of the handler.
    if (c == controls->circuits.end() || !recorded[i].ok() || batch[i]->result.infrastructure) {
      continue;
    }
    const ClaimedJob& job = batch[i]->job;
    auto t = states_.RecordCircuit({job.event.endpoint, job.handler}, *recorded[i], c->second,
                                   clock_.Now());
    if (!t.ok()) {
      LogError({{"msg", "cannot record the attempt for the circuit breaker"},
                {"endpoint", job.event.endpoint},
                {"handler", job.handler},
                {"error", t.status().ToString()}});
    } else if (*t) {
      ReportTransition(**t);
      if ((*t)->to == Circuit::kOpen) AlertCircuitOpen(*batch[i], **t);
    }
  }
}

// `alerts:` circuit_open (work/alerts.h): the breaker held the handler. A probe that fails
// opens it again: within the alert's repeat window that is a duplicate, sent once.
void Dispatcher::AlertCircuitOpen(const Attempt& a, const CircuitTransition& t) {
  if (a.config->alerts.empty()) return;
  AlertFacts facts{.endpoint = t.endpoint,
                   .handler = t.handler,
                   .event_id = a.job.event.event_id,
                   .detail = "circuit opened after " + std::to_string(t.failures) +
                             " failures in a row: the handler's jobs wait until the cooldown"};
  facts.fields["failures"] = t.failures;
  facts.fields["from"] = CircuitName(t.from);
  (void)RaiseAlerts(alerts_, *a.config, AlertCondition::kCircuitOpen, facts, clock_.Now());
}

void Dispatcher::BlockingThread() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++blocking_idle_;
    blocking_cv_.wait(lock, [this] { return stopping_ || !blocking_.empty(); });
    --blocking_idle_;
    if (blocking_.empty()) return;  // stopping
    Attempt* a = blocking_.front();
    blocking_.pop_front();
    lock.unlock();
    HandlerResult result = a->handler->Run(a->job.event);
    Ended(a, std::move(result));
    lock.lock();
  }
}

}  // namespace hookbox
