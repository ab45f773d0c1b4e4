// The alert watch: the two alert conditions that no step of the pipeline meets on its own
// (README, "Failure alerts"), looked for by one thread of their own.
//
// - `backlog`: a handler's oldest due job has waited `backlog_age` (each alert's own). Every
//   check asks the inbox for each handler's oldest due job (Inbox::Handlers, the query the
//   hookbox_jobs gauge makes), and raises the alert for each handler over the age through
//   RaiseAlert: stored, so it is sent, retried and deduplicated like every other alert (at
//   most once per `repeat:` per handler, across replicas). A paused handler's backlog raises
//   nothing: the operator holds it on purpose (its pause is its own record). A check runs every
//   quarter of the smallest backlog_age, at least every second and at most every 30 s.
// - `storage_unavailable`: while storage is failing (StorageHealth::Problem(): one operation
//   failed kStorageFailuresUnready times in a row), the alert cannot be stored, so it is sent
//   from memory, by this thread, straight to the alert's target (Handler::Run). At most once
//   per `repeat:` window per process (a replica cannot see another's sends while storage is
//   down), tried again with backoff (1 s doubling to 60 s) until the target takes it; it is
//   not kept across a restart. Each send is counted in hookbox_attempts_total like a stored
//   alert's attempt.
//
// Thread-safe: Swap() and Stop() may be called from any thread; Tick() is the thread's step,
// called by tests directly with a time of their own.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "config/config.h"
#include "handlers/handler.h"
#include "inbox/event_store.h"
#include "inbox/handler_states.h"
#include "ops/clock.h"

namespace hookbox {

class AlertWatch final {
 public:
  // `storage_problem` is what the process's storage tracker says (Storage().Problem() in the
  // daemon): "" while storage works.
  AlertWatch(HandlerStates& states, EventStore& events, std::shared_ptr<const Config> config,
             std::shared_ptr<const HandlerSet> handlers, const Clock& clock,
             std::function<std::string()> storage_problem);
  ~AlertWatch();
  AlertWatch(const AlertWatch&) = delete;
  AlertWatch& operator=(const AlertWatch&) = delete;

  // Runs Tick() every second on a thread until Stop().
  void Start();
  // Wakes and joins the thread; a send under way finishes first. Safe to call twice.
  void Stop();
  // SIGHUP: the new alerts and their targets.
  void Swap(std::shared_ptr<const Config> config, std::shared_ptr<const HandlerSet> handlers);

  // One step at `now`: the storage check, and the backlog check when one is due.
  void Tick(TimePoint now);

  // How often the backlog is checked under `config` (above); nullopt when no alert asks.
  static std::optional<Duration> BacklogInterval(const Config& config);

 private:
  // A storage_unavailable alert's sends, by alert name.
  struct Sending {
    TimePoint sent_window{};  // the repeat window of the last send taken; {} when none
    TimePoint next_try{};
    int tries = 0;
  };

  void Loop();
  void CheckBacklog(const Config& config, TimePoint now);
  void CheckStorage(const Config& config, const HandlerSet& handlers, TimePoint now);
  void SendStorageAlert(const Alert& alert, Handler& target, const std::string& problem,
                        TimePoint now, Sending& sending);

  HandlerStates& states_;
  EventStore& events_;
  const Clock& clock_;
  const std::function<std::string()> storage_problem_;
  std::mutex mu_;  // guards config_, handlers_, stopping_
  std::condition_variable cv_;
  std::shared_ptr<const Config> config_;
  std::shared_ptr<const HandlerSet> handlers_;
  bool stopping_ = false;
  std::thread thread_;
  // The thread's own (Tick's).
  TimePoint next_backlog_check_{};
  std::map<std::string, Sending> sending_;
};

}  // namespace hookbox
