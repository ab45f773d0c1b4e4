// An Inbox that hands every call to another one: a test derives from it and overrides only
// the calls it counts or makes fail, and the rest run on the real inbox (SQLite or
// PostgreSQL) behind it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "inbox/inbox.h"

namespace hookbox {

class ForwardingInbox : public Inbox {
 public:
  explicit ForwardingInbox(Inbox& inner) : in_(inner) {}

  using Inbox::ClaimJobs;
  StatusOr<std::vector<ClaimedJob>> ClaimJobs(const std::string& owner, int max, TimePoint now,
                                              std::chrono::milliseconds lease,
                                              const ClaimLimits& limits) override {
    return in_.ClaimJobs(owner, max, now, lease, limits);
  }
  std::vector<StatusOr<Outcome>> FinishJobs(const std::vector<FinishRequest>& f) override {
    return in_.FinishJobs(f);
  }
  StatusOr<Outcome> FinishJob(const ClaimedJob& job, const JobOutcome& outcome,
                              const TransactionalWork* work,
                              const JobOutcome* work_failed) override {
    return in_.FinishJob(job, outcome, work, work_failed);
  }
  StatusOr<AcceptResult> Accept(const Event& e) override { return in_.Accept(e); }
  StatusOr<EventClaim> ClaimEvent(const std::string& endpoint, const std::string& id,
                                  const std::string& owner, TimePoint now,
                                  std::chrono::milliseconds lease) override {
    return in_.ClaimEvent(endpoint, id, owner, now, lease);
  }
  StatusOr<int> Retry(const std::string& endpoint, const std::string& id, TimePoint now) override {
    return in_.Retry(endpoint, id, now);
  }
  StatusOr<BulkPlan> PlanBulk(const BulkRequest& r) override { return in_.PlanBulk(r); }
  StatusOr<int64_t> RetryDead(const BulkRequest& r) override { return in_.RetryDead(r); }
  StatusOr<int64_t> RetryWaiting(const BulkRequest& r) override { return in_.RetryWaiting(r); }
  StatusOr<int64_t> Replay(const BulkRequest& r) override { return in_.Replay(r); }
  Status HoldForHandler(const std::vector<ClaimedJob>& jobs, TimePoint now) override {
    return in_.HoldForHandler(jobs, now);
  }
  StatusOr<int64_t> ReleaseHeld(const std::vector<HandlerRef>& h, TimePoint now) override {
    return in_.ReleaseHeld(h, now);
  }
  StatusOr<int64_t> SetPaused(const std::vector<HandlerRef>& h, bool paused,
                              const std::string& reason, TimePoint now) override {
    return in_.SetPaused(h, paused, reason, now);
  }
  StatusOr<std::vector<HandlerStatus>> Handlers(TimePoint now, bool count_jobs) override {
    return in_.Handlers(now, count_jobs);
  }
  StatusOr<std::optional<CircuitTransition>> RecordCircuit(const HandlerRef& h, Outcome o,
                                                           const CircuitLimit& l,
                                                           TimePoint now) override {
    return in_.RecordCircuit(h, o, l, now);
  }
  StatusOr<std::vector<HandlerBacklog>> UnfinishedByHandler() override {
    return in_.UnfinishedByHandler();
  }
  StatusOr<ReassignCounts> Reassign(const std::string& endpoint, const std::string& from,
                                    const std::string& to, TimePoint now) override {
    return in_.Reassign(endpoint, from, to, now);
  }
  StatusOr<int64_t> DropJobs(const std::string& endpoint, const std::string& handler,
                             TimePoint now) override {
    return in_.DropJobs(endpoint, handler, now);
  }
  Status Heartbeat(const InstanceBeat& beat) override { return in_.Heartbeat(beat); }
  StatusOr<std::vector<ExpiredInstance>> ReleaseExpiredLeases(TimePoint now,
                                                              const std::string& self,
                                                              TimePoint forget_before) override {
    return in_.ReleaseExpiredLeases(now, self, forget_before);
  }
  StatusOr<int64_t> RemoveInstance(const std::string& id, TimePoint now) override {
    return in_.RemoveInstance(id, now);
  }
  Status PrepareWork(const TransactionalWork& work) override { return in_.PrepareWork(work); }
  StatusOr<std::vector<InboxRow>> List(const ListFilter& f) override { return in_.List(f); }
  StatusOr<std::vector<DeadJob>> DeadJobs(int64_t before, int limit) override {
    return in_.DeadJobs(before, limit);
  }
  StatusOr<int64_t> Count(const ListFilter& f) override { return in_.Count(f); }
  StatusOr<std::vector<DeadJob>> DeadJobsOf(std::span<const int64_t> ids) override {
    return in_.DeadJobsOf(ids);
  }
  StatusOr<std::vector<HandlerRef>> KnownHandlers() override { return in_.KnownHandlers(); }
  StatusOr<bool> ForgetHandler(const HandlerRef& h) override { return in_.ForgetHandler(h); }
  StatusOr<InboxDetail> Show(const std::string& endpoint, const std::string& id) override {
    return in_.Show(endpoint, id);
  }
  Status Clear(const std::string& endpoint, const std::string& id, TimePoint now) override {
    return in_.Clear(endpoint, id, now);
  }
  Status RenewLeases(std::span<const ClaimedJob> jobs, TimePoint now,
                     std::chrono::milliseconds lease) override {
    return in_.RenewLeases(jobs, now, lease);
  }
  StatusOr<InboxStats> Stats() override { return in_.Stats(); }
  StatusOr<QueueStats> Queue(bool count_done) override { return in_.Queue(count_done); }
  StatusOr<PurgeCounts> Purge(const PurgeRequest& r) override { return in_.Purge(r); }
  Status Ping() override { return in_.Ping(); }
  std::unique_ptr<JobsHold> HoldJobs(const std::vector<ClaimedJob>& jobs) override {
    return in_.HoldJobs(jobs);
  }
  bool AwaitEvent(const std::string& endpoint, const std::string& id,
                  std::chrono::milliseconds wait) override {
    return in_.AwaitEvent(endpoint, id, wait);
  }
  std::optional<int64_t> WalBytes() override { return in_.WalBytes(); }

 protected:
  Inbox& in_;
};

}  // namespace hookbox
