// The dispatcher: runs the handlers of stored events. One thread claims due jobs from the
// inbox in batches and finishes the attempts that ended in batches too (Inbox::FinishJobs:
// one transaction and one commit for all of them, each still a compare-and-swap on its lease
// token). A worker whose lease ran out and was taken over loses: its result is logged and
// never written. Failures are retried with backoff (backoff.h); a job whose tries are used
// up, or that failed permanently, is dead.
//
// Each handler is its own lane (DESIGN.md, "Lanes"). How many attempts run at once is set per
// handler (`concurrency:` of its kind), and a claim takes of each handler at most its free
// slots, still one job at a time per resource; every job claimed begins at once. So a slow
// or stuck handler fills its own slots only, and a job is never claimed to wait: the claim's
// transaction, which reads the handler's pause and circuit and the loaded config, is the
// check that the attempt may run. `exec` attempts wait on their child through the child
// watch (no thread each); `http` and `file` attempts run on threads the dispatcher starts as
// they are needed, one per attempt in flight; a handler's TransactionalWork runs inside
// the finishing transaction itself. The dispatcher thread never waits on a child or a downstream.
//
// Leases last the longest handler timeout plus a margin, so no other process starts a job
// while an attempt may still run; a job left `processing` by a crash becomes claimable when
// its lease ends (sooner, once its process's heartbeat has expired: work/liveness.h).
//
// Thread-safe: Wake(), Swap() and Stop() may be called from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "handlers/handler.h"
#include "inbox/event_store.h"
#include "inbox/handler_states.h"
#include "inbox/job_queue.h"
#include "ops/clock.h"

namespace hookbox {

class Dispatcher final {
 public:
  // The inbox in three of its roles: the jobs it claims and finishes, the handler states
  // its gates read and its circuits write, and the event store its alerts go into (one
  // Inbox plays all three).
  Dispatcher(JobQueue& jobs, HandlerStates& states, EventStore& alerts,
             std::shared_ptr<const Config> config, std::shared_ptr<const HandlerSet> handlers,
             const Clock& clock);
  ~Dispatcher();

  // Starts dispatching (`enabled` false, `workers: 0`: nothing runs; jobs wait). The leases
  // of processes that died are ended by InstanceLiveness (work/liveness.h), started before.
  void Start(bool enabled);
  // New work may be due (an accept created jobs): look now, not at the next poll.
  void Wake();
  // Stops claiming and waits up to `grace` for the attempts under way to finish and be
  // recorded. False when some still run then: their leases will expire and the jobs will be
  // retried.
  bool Stop(std::chrono::milliseconds grace);

  // Swaps the config and handlers (SIGHUP); attempts under way finish with the old ones.
  // Held jobs of the handlers the new config has are released (work/held.h).
  void Swap(std::shared_ptr<const Config> config, std::shared_ptr<const HandlerSet> handlers);

  // Most jobs one claim takes.
  static constexpr int kMaxClaim = 64;

 private:
  struct Attempt;  // one job claimed and running (dispatcher.cc)

  void Loop();
  // Claims up to each handler's free slots and starts what it claimed; false when nothing
  // was claimed.
  bool Claim();
  int FreeSlots(const HandlerSet& handlers, std::vector<HandlerSlots>* slots) const;
  // Starts `a` in the slot its claim took.
  void Launch(std::unique_ptr<Attempt> a);
  void Ended(Attempt* a, HandlerResult result);
  void FinishBatch(std::vector<Attempt*>& batch);
  void Hold(const std::vector<ClaimedJob>& jobs, TimePoint now);
  void BlockingThread();

  // What the inbox must know of a config's handlers beyond their jobs (DESIGN.md, "Handler
  // state"): the rates for the claim, the circuit breakers by "<endpoint>\n<handler>".
  struct Controls {
    ClaimLimits limits;
    std::map<std::string, CircuitLimit> circuits;
  };
  static std::shared_ptr<const Controls> ControlsOf(const Config& config);
  // At start and reload: the circuits of handlers configured without one, closed.
  void CloseUnconfiguredCircuits(const Config& config, const Controls& controls);
  // A job the batch made dead: the `job_dead` alerts (work/alerts.h).
  void AlertDead(const Attempt& a, const JobOutcome& outcome);
  // A circuit the batch opened: the `circuit_open` alerts.
  void AlertCircuitOpen(const Attempt& a, const CircuitTransition& t);
  // After a batch's finishes: the circuits' counts, and their transitions logged.
  void RecordCircuits(const std::vector<Attempt*>& batch,
                      const std::vector<StatusOr<Outcome>>& recorded);

  JobQueue& jobs_;
  HandlerStates& states_;
  EventStore& alerts_;
  const Clock& clock_;
  const std::string owner_;

  std::mutex mu_;                        // guards everything below
  std::condition_variable cv_;           // the dispatcher's: completions, wake, stop
  std::condition_variable blocking_cv_;  // the blocking threads': work, stop
  std::condition_variable stopped_cv_;   // Stop()'s: nothing in flight
  std::shared_ptr<const Config> config_;
  std::shared_ptr<const HandlerSet> handlers_;
  std::shared_ptr<const Controls> controls_;
  uint64_t wake_seq_ = 0;
  bool stopping_ = false;
  // Every attempt claimed and not yet finished in the inbox, by address.
  std::map<Attempt*, std::unique_ptr<Attempt>> attempts_;
  std::vector<Attempt*> ended_;  // ran, to be finished in the next batch
  // Per handler ("<endpoint>\n<handler>"): attempts running (claimed and not yet ended).
  std::map<std::string, int> running_;
  // Blocking kinds (http, file): attempts for the threads, and the threads.
  std::deque<Attempt*> blocking_;
  int blocking_idle_ = 0;
  std::vector<std::thread> blocking_threads_;
  std::thread thread_;
  // The dispatcher thread's own (and Start's, before it runs): the last ReleaseHeldJobs.
  std::chrono::steady_clock::time_point released_held_at_;
};

}  // namespace hookbox
