// EventStore, the inbox's role for receive/: an event and its jobs stored once (Accept, one
// transaction that stores everything or nothing, durable when it returns a verdict; any
// storage failure is Unavailable and leaves no trace), and for mode: sync the claim, hold
// and renewal of the jobs a request runs itself. Thread-safe: any thread, at the same time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/transactional_work.h"
#include "inbox/jobs.h"
#include "ops/clock.h"

namespace hookbox {

// What Accept() stores: an event that passed verification and identification.
struct Event {
  std::string endpoint;
  std::string event_id;
  std::string id_source;  // "header:X-GitHub-Delivery", "body:/id" or "sha256"
  std::string event_type;
  std::string resource_id;              // "" = no ordering for this event
  std::string sequence;                 // as delivered
  std::optional<int64_t> sequence_key;  // comparable form; nullopt = no ordering
  std::string body_sha256;              // hex
  std::string headers_json;
  std::string body;
  std::vector<std::string> handlers;  // one job each; empty -> stored as `ignored`
  bool strict_body = false;           // same id, other body -> Conflict instead of duplicate
  // dedupe: [id, body]. A new id whose body_sha256 equals a stored row's of this endpoint is
  // that row's duplicate (AcceptResult::duplicate_of): no row, no jobs. Checked inside the
  // accept transaction, so two such deliveries at once store one row.
  bool dedupe_body = false;
  TimePoint received_at;

  // mode: sync. The jobs are created already claimed by `sync_owner` (the request), with a
  // lease of `sync_lease`, and are never claimed by the worker pool. The handlers whose work
  // runs in the inbox's transaction (name, work) run in this one: their side effects and the
  // inbox row commit together or not at all (a failure is Internal and leaves no row).
  std::string sync_owner;
  std::chrono::milliseconds sync_lease{0};
  std::vector<std::pair<std::string, const TransactionalWork*>> sync_work;
};

enum class Verdict { kAccepted, kDuplicate, kStale, kIgnored };
const char* VerdictName(Verdict v);

struct AcceptResult {
  Verdict verdict;
  bool body_changed = false;  // duplicate whose body differs from the stored one
  // A duplicate by body (Event::dedupe_body): the event id of the stored row it repeats,
  // on which it was counted. "" for every other verdict, and for duplicates by id.
  std::string duplicate_of;
  std::vector<ClaimedJob> claimed;  // mode: sync, accepted: the jobs the request now runs
};

// What a sync request found when it tried to take over an event's jobs.
struct EventClaim {
  enum class State {
    kClaimed,  // `jobs` are now leased to the caller
    kBusy,     // another request or worker holds a live lease on a job of the event
    kSettled,  // nothing left to run: every job is done or dead (or there are none)
  } state = State::kSettled;
  std::string row_status;
  std::vector<ClaimedJob> jobs;
};

// A lock a sync request holds on the jobs it runs (see Inbox::HoldJobs); dropping it
// releases the lock.
class JobsHold {
 public:
  virtual ~JobsHold() = default;
};

// EventStore: what receive/ does with a delivery. Stores an event and its jobs once
// (Accept), and for mode: sync claims, holds and renews the jobs the request runs itself.
class EventStore {
 public:
  virtual ~EventStore() = default;

  virtual StatusOr<AcceptResult> Accept(const Event& event) = 0;

  // mode: sync. Claims the unfinished jobs of one event for the caller (a redelivery
  // taking over after a failed or crashed first request), unless one is leased to someone
  // else. NotFound when there is no such row.
  virtual StatusOr<EventClaim> ClaimEvent(const std::string& endpoint, const std::string& event_id,
                                          const std::string& owner, TimePoint now,
                                          std::chrono::milliseconds lease) = 0;

  // mode: sync, the concurrent duplicate's wait as a real lock (PostgreSQL). The
  // request that runs an event's jobs holds a row lock on them for the whole run (HoldJobs,
  // FOR KEY SHARE in a transaction of its own: its own finish can still update the rows),
  // and a duplicate that found the event busy waits on that lock (AwaitEvent, FOR UPDATE
  // with lock_timeout = `wait`) instead of polling the lease: it wakes the moment the first
  // request finishes or its process dies (the server ends a dead client's transaction).
  // Both return at once when they cannot take part (no spare connection, a backend with no
  // such lock): the lease poll stays the fallback, so correctness never depends on them.
  // AwaitEvent is true when it did wait for another request's lock. SQLite: one process,
  // whose requests see each other's leases at once; no hold, no wait.
  virtual std::unique_ptr<JobsHold> HoldJobs(const std::vector<ClaimedJob>& /*jobs*/) {
    return nullptr;
  }
  virtual bool AwaitEvent(const std::string& /*endpoint*/, const std::string& /*event_id*/,
                          std::chrono::milliseconds /*wait*/) {
    return false;
  }

  // mode: sync. A request runs its event's jobs one after another, so the lease its claim
  // took (Accept, ClaimEvent: enough for one run) must not be what covers the last of
  // them: as each job after the first starts, the request renews the leases it still
  // holds, `jobs` (the one starting and those after it), to lease_until = now + lease
  // (that handler's timeout and a margin). One transaction
  // and a compare-and-swap per job on its lease token: if any job's token no longer holds
  // (the request stalled, its lease ran out and another request took the event over), no
  // lease changes and the answer is Conflict("lease lost"); the caller must then run none
  // of them. Ok for no jobs.
  virtual Status RenewLeases(std::span<const ClaimedJob> jobs, TimePoint now,
                             std::chrono::milliseconds lease) = 0;
};

}  // namespace hookbox
