// JobQueue, the inbox's role for the dispatcher (work/): due jobs claimed under leases,
// finished by compare-and-swap on the lease, jobs of a missing handler held, and the
// leases' liveness kept by the instances' heartbeats. Thread-safe: any thread, at the
// same time.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/job.h"
#include "base/status.h"
#include "base/transactional_work.h"
#include "inbox/jobs.h"
#include "ops/clock.h"

namespace hookbox {

// How an attempt ended and what becomes of its job.
struct JobOutcome {
  Outcome outcome = Outcome::kOk;
  std::string detail;
  enum class Next { kDone, kRetry, kDead } next = Next::kDone;
  TimePoint next_attempt_at;  // kRetry only
  TimePoint finished_at;
  // kRetry only: the handler could not be started (HandlerResult::infrastructure), so the
  // try the claim took from the job's attempt budget is given back.
  bool refund_try = false;
};

// One finish of a batch (Inbox::FinishJobs): what FinishJob() takes. `work_failed` is
// recorded instead of `outcome` when the handler's `work` fails in the transaction.
struct FinishRequest {
  const ClaimedJob* job = nullptr;
  JobOutcome outcome;
  const TransactionalWork* work = nullptr;
  JobOutcome work_failed;
};

// A handler's `rate:`, for the claim: at most `per_second` claims a second on average, from
// a bucket of max(1, per_second) tokens (one second's burst).
struct HandlerRate {
  std::string endpoint, handler;
  double per_second = 0;
};

// A handler's free slots (its `concurrency:` less the attempts it runs): the claim takes at
// most this many of its jobs, so one handler's backlog never fills the claim (its lane).
struct HandlerSlots {
  std::string endpoint, handler;
  int free = 0;
};

// What the claim must know of the config beyond the jobs (the dispatcher's). The handlers
// with a rate, each claimed apart, at most the whole tokens its bucket holds. With `slots`,
// the claim is per handler: a listed handler's jobs are claimed up to its free slots (none
// when it has none, and the due jobs of the others are still found behind its backlog); a
// handler not listed (one this process does not have, whose jobs it only holds) is bounded
// by `max` alone. Without `slots` (empty), every handler is bounded by `max` alone.
struct ClaimLimits {
  std::vector<HandlerRate> rates;
  std::vector<HandlerSlots> slots;
};

// What a process writes of itself at each heartbeat (Inbox::Heartbeat).
struct InstanceBeat {
  std::string id;    // the instance: its lease owners' names start with "<id>:"
  std::string host;  // host name and pid as the process sees them: for the operator's eyes
  int64_t pid = 0;   // only (nothing compares them; a PID namespace has its own pids)
  TimePoint now;
  std::chrono::milliseconds timeout{0};  // alive until now + timeout unless it beats again
};

// An instance whose heartbeat expired and whose leases Inbox::ReleaseExpiredLeases ended.
struct ExpiredInstance {
  std::string id, host;
  int64_t pid = 0;
  std::string heartbeat_at;  // its last beat, RFC 3339
  int64_t jobs = 0;          // jobs whose leases were ended
};

// A held job's next_attempt_at: later than any claim's now, so no claim takes it, and a
// value no retry schedules (backoff is capped at hours). Text as the inbox writes times.
inline constexpr std::string_view kHeldUntil = "9999-12-31T23:59:59.999Z";

// JobQueue: what the dispatcher does with jobs. Claims due jobs under leases, finishes them
// by compare-and-swap on the lease, gives back the jobs of a handler this process lacks, and
// keeps the leases' liveness (the instances' heartbeats).
class JobQueue {
 public:
  virtual ~JobQueue() = default;

  // Claims up to `max` due jobs: pending ones whose next_attempt_at has come, and
  // processing ones whose lease ran out (their worker died). Per-resource order: only the
  // first unfinished job of each (endpoint, resource), in received order, is claimable,
  // and none while another job of the resource holds a live lease. Each claimed job gets
  // a new lease token, lease_until = now + lease, and an open attempts row.
  //
  // Handler state (DESIGN.md, "Handler state"): no job of a paused handler is claimed, nor
  // of one whose circuit is open; once its cooldown is over, one job (the probe) is, and
  // the circuit is half-open until RecordCircuit hears how it went. A handler of
  // `limits.rates` is claimed apart, under a lock on its state row, at most the whole
  // tokens of its bucket, which the claim refills and takes from.
  virtual StatusOr<std::vector<ClaimedJob>> ClaimJobs(const std::string& owner, int max,
                                                      TimePoint now,
                                                      std::chrono::milliseconds lease,
                                                      const ClaimLimits& limits) = 0;
  StatusOr<std::vector<ClaimedJob>> ClaimJobs(const std::string& owner, int max, TimePoint now,
                                              std::chrono::milliseconds lease) {
    return ClaimJobs(owner, max, now, lease, ClaimLimits{});
  }

  // Records the attempt and moves the job on, only if `job.lease_token` still holds the
  // lease (compare-and-swap): a worker whose lease expired and was taken over gets
  // Conflict("lease lost") and changes nothing. With `work`, it runs in the same transaction
  // when the outcome is ok; if it fails, nothing of it stays and `work_failed` (with the
  // error as detail) is recorded instead. With `refund_try`, the
  // job's count of tries against max_attempts goes back down by the one its claim added
  // (the attempts row stays, as history). Returns the outcome recorded. The inbox row
  // becomes processed when all its jobs are done, dead if any is.
  virtual StatusOr<Outcome> FinishJob(const ClaimedJob& job, const JobOutcome& outcome,
                                      const TransactionalWork* work = nullptr,
                                      const JobOutcome* work_failed = nullptr) = 0;

  // Many FinishJob()s in one transaction and one commit (the dispatcher's batch): each
  // finish is still its own compare-and-swap, so one lost lease or failed work changes
  // nothing of the others. One result per finish, in order; a storage failure
  // fails them all. The default runs FinishJob() for each.
  virtual std::vector<StatusOr<Outcome>> FinishJobs(const std::vector<FinishRequest>& finishes) {
    std::vector<StatusOr<Outcome>> results;
    results.reserve(finishes.size());
    for (const FinishRequest& f : finishes) {
      results.push_back(FinishJob(*f.job, f.outcome, f.work, f.work ? &f.work_failed : nullptr));
    }
    return results;
  }

  // Jobs whose handler is gone (DESIGN.md, Handler names). A job names its handler; a
  // process that claims a job whose handler it does not have gives it back held:
  // compare-and-swap on the lease as FinishJob; the job is pending again with its try
  // refunded and its open attempts row removed (nothing ran), next_attempt_at = kHeldUntil
  // so that no claim takes it, and last_error saying why. A held job is unfinished: it
  // still holds back the later jobs of its resource. A lost lease leaves that job alone.
  virtual Status HoldForHandler(const std::vector<ClaimedJob>& jobs, TimePoint now) = 0;
  // Makes the held jobs of these handlers due at `now` (a start or reload that has them).
  // Returns how many.
  virtual StatusOr<int64_t> ReleaseHeld(const std::vector<HandlerRef>& handlers, TimePoint now) = 0;

  // ---- Lease liveness (DESIGN.md, "Lease liveness"): crash recovery that needs no shared
  // host or PID space. Every process that takes leases is an instance: a random id, the
  // start of each of its lease owners' names ("<id>:dispatcher", "<id>:request:..."), kept
  // alive by a heartbeat in the table `instances`. A lease ends before its lease_until only
  // when its owner's instance has stopped beating (or removed itself at a clean stop), never
  // by what one process can see of another's.
  //
  // Records that `beat.id` is alive: an upsert of its row (started_at = now when the row is
  // new; heartbeat_at = now and expires_at = now + timeout every time, host and pid as
  // given). A beat after the row expired or was removed makes it alive again.
  virtual Status Heartbeat(const InstanceBeat& beat) = 0;
  // Ends the leases of expired instances, so that their jobs are claimable at once rather
  // than when those leases run out: every processing job whose lease is live (lease_until
  // >= now) and whose lease_owner starts with "<id>:" of an instance whose expires_at <
  // `now`, other than `self`, gets lease_until = now - 1 ms (a compare-and-swap on its lease
  // token, in job id order); the next claim marks its open attempt abandoned, as for any
  // lease that ran out. A lease whose owner has no instance row (an older hookbox's
  // "<host>:<pid>:...", or an instance forgotten since) is left to its lease_until. Then
  // deletes the instance rows that expired before `forget_before`. Returns the instances
  // whose leases it ended, each with how many.
  virtual StatusOr<std::vector<ExpiredInstance>> ReleaseExpiredLeases(TimePoint now,
                                                                      const std::string& self,
                                                                      TimePoint forget_before) = 0;
  // A clean stop (nothing of the process runs any more): deletes the instance's row and ends
  // the live leases its owners still hold (lease_until = now - 1 ms, as above), in one
  // transaction. Returns how many jobs' leases it ended.
  virtual StatusOr<int64_t> RemoveInstance(const std::string& id, TimePoint now) = 0;

  // Runs a handler's TransactionalWork::Setup once at start: its setup statements (CREATE
  // TABLE IF NOT EXISTS ...) and the check of the rest, so a mistake is found at start, not
  // at the first event.
  virtual Status PrepareWork(const TransactionalWork& work) = 0;
};

}  // namespace hookbox
