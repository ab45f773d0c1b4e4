// The durable inbox: the one interface through which hookbox reaches storage. Backends
// (sqlite/, postgres/) implement it; nothing else runs SQL. The inbox knows no HTTP,
// no provider, no config and no handler: it stores Events and answers with Verdicts, and
// shares with the handlers only the plain types of base/job.h (the event a job runs on, its
// Outcome) and the TransactionalWork some run in its transaction (base/transactional_work.h).
//
// Contract of Accept(): one transaction that either stores everything for the event (the
// inbox row, the sequence gate's advance, one job per handler) or nothing. When it returns
// a verdict the transaction is durable (committed with the configured synchronous level).
// Any storage failure returns Status::Unavailable and leaves no trace of the event.
//
// Thread-safety: every method may be called from any thread at the same time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/job.h"
#include "base/status.h"
#include "base/transactional_work.h"
#include "inbox/filter.h"
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

// An inbox row as the CLI shows it.
struct InboxRow {
  int64_t id = 0;
  std::string endpoint, event_id, id_source, event_type, resource_id, sequence;
  std::string body_sha256, headers_json, status, received_at, processed_at;
  int64_t duplicates = 0;
  std::string last_duplicate_at;
  std::string body;  // filled by Show() only
};

struct AttemptRow {
  int64_t number = 0;
  int64_t generation = 0;  // the job's run it belonged to (0 = first; n = n-th replay)
  std::string started_at, finished_at, outcome, detail;
};

struct JobRow {
  int64_t id = 0;
  std::string handler, status, next_attempt_at, lease_owner, lease_until, last_error;
  int64_t attempts = 0;
  int64_t generation = 0;  // its current run: 0 = first, n after the n-th replay
  std::vector<AttemptRow> attempt_rows = {};
};

struct InboxDetail {
  InboxRow row;
  std::vector<JobRow> jobs;
};

// What List() reads: the rows the filter selects (filter.h), one page of them.
struct ListFilter {
  EventFilter filter;    // endpoint, status, type, handler, time window, body fields
  std::string event_id;  // "" = all; else the row with exactly this id
  // Keyset paging (the console's next page): only rows after this one in the list's order
  // (received_at, then id, both descending), given as the previous page's last row.
  // before_id 0 = from the top. Never OFFSET: a page costs the same at any depth.
  std::string before_received_at;
  int64_t before_id = 0;
  int limit = 100;
};

// A dead job with its event, for the console's dead letters (newest first).
struct DeadJob {
  InboxRow row;  // without its body
  int64_t job_id = 0;
  std::string handler, last_error;
  int64_t attempts = 0;
};

// What the daily purge removes: rows received before the cutoffs (processed, stale and
// ignored before `processed_before`, dead before `dead_before`), sequence-gate rows not
// updated since `sequences_before`. Pending and processing rows are never purged, nor is a
// row with any unfinished job (a `dead` row whose other jobs still wait or run).
struct PurgeRequest {
  TimePoint processed_before;
  TimePoint dead_before;
  TimePoint sequences_before;
  int batch = 500;       // rows per transaction, so accepts never wait long behind a purge
  bool dry_run = false;  // count what would go, delete nothing
};

struct PurgeCounts {
  int64_t processed = 0, stale = 0, ignored = 0, dead = 0, sequences = 0;
};

// For metrics: jobs by status, and the age of the oldest unfinished job.
struct QueueStats {
  std::map<std::string, int64_t> jobs_by_status;
  std::string oldest_unfinished_received_at;  // RFC 3339; "" when none
};

// Counts of inbox rows by endpoint, then status.
using InboxStats = std::map<std::string, std::map<std::string, int64_t>>;

// A job a worker holds a lease on: the stored event plus what identifies this attempt.
struct ClaimedJob {
  int64_t job_id = 0;
  int64_t inbox_id = 0;
  std::string handler;
  std::string lease_token;
  int budget_used = 0;     // tries since the job was created or re-armed, this one included
  HandlerEvent event;      // event.attempt: this try's number in the job's whole history
  int64_t attempt_id = 0;  // this try's attempts row, which its finish records
  // Claimed under a rate limit (ClaimLimits): when it was due, for the metric of the time
  // jobs waited on the limit. nullopt for the others.
  std::optional<TimePoint> rate_due_at;
  bool probe = false;  // the half-open circuit's one probe attempt
};

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

// How a job names the handler that runs it: the endpoint and the handler's name.
struct HandlerRef {
  std::string endpoint, handler;
};

// The unfinished jobs of one handler (Inbox::UnfinishedByHandler).
struct HandlerBacklog {
  std::string endpoint, handler;
  int64_t unfinished = 0;  // pending or processing
  int64_t held = 0;        // of those, held for want of their handler (HoldForHandler)
};

// What Inbox::Reassign did: jobs moved to the new handler, and jobs of the old one left
// where they were (their row already has a job of the new handler, or they are running).
struct ReassignCounts {
  int64_t moved = 0, kept = 0;
};

// The bulk verbs (README, "Bulk retry and replay"): `inbox retry --dead` re-arms the dead
// jobs of every row the filter matches; `inbox retry --waiting` makes the jobs waiting in
// backoff due now; `inbox replay` runs one handler's done jobs again as a new generation.
// With `filter.handler` set, retry acts on only that handler's jobs; replay requires it (the
// handler to run again).
enum class BulkVerb { kRetryDead, kRetryWaiting, kReplay };
// "retry", "retry_waiting", "replay": the metric's label
const char* BulkVerbName(BulkVerb verb);

struct BulkRequest {
  BulkVerb verb = BulkVerb::kRetryDead;
  EventFilter filter;
  TimePoint now;
  // Re-armed jobs per second; 0 = all due at `now`. Else the i-th (from 0, in received
  // order) is due at now + i / rate, so a large batch does not stampede the downstream.
  double rate = 0;
  int batch = 500;  // jobs per write (PostgreSQL: per transaction; SQLite: per statement,
                    // at most 200, its transactions bounded by time instead)
};

// `--rate` (the CLI, the console's bulk page): "N/s" or "N/min", N a positive number, as
// jobs per second; nullopt when it is neither.
std::optional<double> ParseBulkRate(std::string_view text);

// What a bulk verb would do (PlanBulk) or did (the act's plan is taken just before it).
struct BulkPlan {
  int64_t matched = 0;  // rows the filter matches
  int64_t rows = 0;     // of those, rows with a job to act on
  int64_t jobs = 0;     // jobs to act on: dead ones (retry), done ones of the handler (replay)
  std::map<std::string, int64_t> jobs_by_handler;  // "endpoint/handler" -> jobs
  std::string oldest, newest;                      // received_at of those rows; "" when none
  // Matching rows with nothing to act on: stale and ignored rows have no jobs at all; the
  // others have no dead job (retry) or no done job of the handler (replay).
  int64_t skipped_stale = 0, skipped_ignored = 0, skipped_no_job = 0;
};

// Handler state (DESIGN.md, "Handler state"): what holds a handler's jobs back
// besides their due time. Kept in the inbox database (table handler_state), so it survives
// restarts and every PostgreSQL replica's claim honours it.
enum class Circuit { kClosed, kOpen, kHalfOpen };
const char* CircuitName(Circuit c);  // "closed", "open", "half-open"

// A handler's `circuit: {failures: N, cooldown: D}`.
struct CircuitLimit {
  int failures = 0;  // consecutive failed attempts that open it; 0 = no breaker
  std::chrono::milliseconds cooldown{0};
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

// One row of handler_state, as stored (times RFC 3339 text; "" = NULL).
struct HandlerState {
  std::string endpoint, handler;
  bool paused = false;
  std::string paused_reason, paused_at;
  Circuit circuit = Circuit::kClosed;
  int64_t failures = 0;
  std::string open_until, probe_until;
  std::optional<double> tokens;  // nullopt: full
  std::string refilled_at;
};

// A handler state in one word, as `handler list`, the console and a bulk plan print it:
// "paused" (the operator's, named first), "circuit-open", "half-open" or "running".
const char* HandlerStateName(const HandlerState& state);

// A handler as `handler list` shows it: its state (a default one when it has no row) and
// its jobs: pending (not yet due, or held), due (pending and due now), running
// (processing), dead.
struct HandlerStatus {
  HandlerState state;
  int64_t pending = 0, due = 0, running = 0, dead = 0;
  // When the oldest due job became due (its next_attempt_at, RFC 3339): how long the
  // handler's backlog has waited (the `backlog` alert). "" when nothing is due.
  std::string oldest_due;
};

// A change of a circuit (Inbox::RecordCircuit, and the claim's probe): for the log line
// and hookbox_handler_circuit_transitions_total.
struct CircuitTransition {
  std::string endpoint, handler;
  Circuit from = Circuit::kClosed, to = Circuit::kClosed;
  int64_t failures = 0;
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

// A lock a sync request holds on the jobs it runs (see Inbox::HoldJobs); dropping it
// releases the lock.
class JobsHold {
 public:
  virtual ~JobsHold() = default;
};

// ---- The inbox's four roles. One object (SqlInbox, on either database) plays all four, as
// Inbox; each client holds the role it uses.
//
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

// HandlerStates: each handler's own state (pause, circuit, rate bucket) and the jobs filed
// under its name, for the dispatcher's gates, the metrics and the `handler` verbs.
class HandlerStates {
 public:
  virtual ~HandlerStates() = default;

  // Handler state: the operator's pause (state kept, with the reason and when) and resume,
  // which also closes the handler's circuit if it is open or half-open. Returns how many
  // handlers changed. A pause keeps pending jobs pending: no try spent.
  virtual StatusOr<int64_t> SetPaused(const std::vector<HandlerRef>& handlers, bool paused,
                                      const std::string& reason, TimePoint now) = 0;
  // Every handler with a state row or an unfinished or dead job, by endpoint and handler.
  // Without `count_jobs`, only the handlers with a state row, and no job counts: a read of
  // the small state table, for the paused gauge at every scrape, instead of a count over
  // every unfinished and dead job.
  virtual StatusOr<std::vector<HandlerStatus>> Handlers(TimePoint now, bool count_jobs) = 0;
  // A finished attempt of a handler with a circuit breaker: failed and timeout count
  // towards `limit.failures` (and re-open a half-open circuit for another cooldown); ok
  // resets the count and closes it; permanent counts for neither, and frees a half-open
  // circuit's probe. The transition, if the circuit changed state.
  virtual StatusOr<std::optional<CircuitTransition>> RecordCircuit(const HandlerRef& handler,
                                                                   Outcome outcome,
                                                                   const CircuitLimit& limit,
                                                                   TimePoint now) = 0;

  // Unfinished jobs by (endpoint, handler), held ones counted apart; ordered by both.
  virtual StatusOr<std::vector<HandlerBacklog>> UnfinishedByHandler() = 0;
  // Gives the jobs of handler `from` on `endpoint` that are not running and not done
  // (pending, held, dead) to handler `to`: held ones become due at `now`, the others keep
  // their schedule and status (a dead one runs under `to` after `inbox retry`). A row that
  // already has a job of `to` keeps its `from` job. The caller checks that `to` exists.
  virtual StatusOr<ReassignCounts> Reassign(const std::string& endpoint, const std::string& from,
                                            const std::string& to, TimePoint now) = 0;
  // Deletes the jobs of `handler` on `endpoint` that are not running and not done (pending,
  // held, dead), with their attempts, and settles their rows (processed when every job
  // left is done). Returns how many.
  virtual StatusOr<int64_t> DropJobs(const std::string& endpoint, const std::string& handler,
                                     TimePoint now) = 0;

  // Every (endpoint, handler) that has a job of any status or a handler_state row, ordered
  // by both: the names an operator may give that the config no longer has (the CLI's
  // --handler). Reads every job: asked only for a name the config does not settle.
  virtual StatusOr<std::vector<HandlerRef>> KnownHandlers() = 0;
  // Deletes the handler_state row of a handler (its pause, circuit and rate bucket), so that
  // `handler list` and hookbox_handler_paused forget it: for a handler the config no longer
  // has (the CLI checks). Its jobs stay as they are. Returns whether there was a row.
  virtual StatusOr<bool> ForgetHandler(const HandlerRef& handler) = 0;
};

// InboxAdmin: the operator's reads and verbs (the CLI, the console, the purge, /readyz).
class InboxAdmin {
 public:
  virtual ~InboxAdmin() = default;

  // Re-arms the dead jobs of a row with a fresh attempt budget; re-armed jobs of sync
  // endpoints run in the worker pool (no producer is waiting for them). NotFound when there is no
  // such row; InvalidArgument when it has no dead job.
  virtual StatusOr<int> Retry(const std::string& endpoint, const std::string& event_id,
                              TimePoint now) = 0;

  // ---- The bulk verbs (BulkRequest). Safe beside the daemon and, on PostgreSQL, other
  // replicas: each job is changed by a compare-and-swap on its status (dead for a retry, done
  // for a replay), so a job that changed meanwhile is left alone and a repeat finds nothing
  // more to do; dead and done jobs hold no lease, so no running attempt is ever touched.
  // Jobs go in chunks (BulkRequest::batch), a short write transaction at a time, so accepts
  // wait at most one of them.
  //
  // The counts of what RetryDead / RetryWaiting / Replay would do now; changes nothing.
  // InvalidArgument for a replay without a handler.
  virtual StatusOr<BulkPlan> PlanBulk(const BulkRequest& request) = 0;
  // Re-arms the dead jobs of the matching rows as Retry() does (status pending, a fresh
  // attempt budget, sync jobs to the worker pool; the idempotency key, generation and
  // attempts history kept), due at `now` or spread by `rate`, and sets each row pending
  // (dead while another job of it stays dead). Returns how many jobs it re-armed.
  virtual StatusOr<int64_t> RetryDead(const BulkRequest& request) = 0;
  // Brings the due time of the matching rows' jobs waiting in backoff (pending, attempts >
  // 0, next_attempt_at after `now`, not held) forward to `now`, or spread by `rate`; their
  // attempt budget and rows as they were. Returns how many jobs it changed.
  virtual StatusOr<int64_t> RetryWaiting(const BulkRequest& request) = 0;
  // Runs the done job of `filter.handler` of each matching row again: generation + 1 (a new
  // idempotency key, HandlerEvent::IdempotencyKey), status pending, a fresh attempt budget,
  // due at `now` or spread by `rate`; the row pending as RetryDead sets it. The attempts of
  // the earlier runs stay, each with its generation. Jobs of a resource run again in
  // received order (the claim's per-resource order). Returns how many jobs it re-armed.
  virtual StatusOr<int64_t> Replay(const BulkRequest& request) = 0;

  // Newest first.
  virtual StatusOr<std::vector<InboxRow>> List(const ListFilter& filter) = 0;
  // How many rows List() would give without its limit: the filter's and the keyset's
  // condition, counted (for the CLI's "N more rows" once a page is full; asked only then).
  virtual StatusOr<int64_t> Count(const ListFilter& filter) = 0;
  // The dead jobs of these rows (inbox ids), by row then job id, for the dead view of
  // `inbox list`: each DeadJob's `row` holds only its id. An index lookup per row.
  virtual StatusOr<std::vector<DeadJob>> DeadJobsOf(std::span<const int64_t> inbox_ids) = 0;

  // Dead jobs, newest first (by job id): up to `limit` of those with an id below
  // `before_job_id` (0 = from the newest).
  virtual StatusOr<std::vector<DeadJob>> DeadJobs(int64_t before_job_id, int limit) = 0;
  // NotFound when there is no such row.
  virtual StatusOr<InboxDetail> Show(const std::string& endpoint, const std::string& event_id) = 0;
  // Deletes the row with its jobs and attempts, so the next delivery of the event is accepted
  // as new. NotFound when there is no such row. Conflict("event is being processed"), and
  // nothing deleted, while a job of the row holds a live lease (processing, lease_until >=
  // `now`): its attempt is running, and deleting the row would discard its result and let
  // a later job of its resource run beside it. An expired lease (its worker died) does not
  // refuse.
  virtual Status Clear(const std::string& endpoint, const std::string& event_id, TimePoint now) = 0;
  virtual StatusOr<InboxStats> Stats() = 0;
  // Jobs by status (with `done`: those count up to the retention, so the console, which
  // shows the others at every page view, leaves them out) and the oldest unfinished job.
  virtual StatusOr<QueueStats> Queue(bool count_done) = 0;
  // Deletes in batches (see PurgeRequest); the counts are what went (or would go).
  virtual StatusOr<PurgeCounts> Purge(const PurgeRequest& request) = 0;
  // Ok when the database answers a trivial query (for /readyz).
  virtual Status Ping() = 0;
  // The size in bytes of the write-ahead log the inbox keeps itself (SQLite's
  // `<database>-wal`: the hookbox_wal_bytes gauge), 0 while that file does not exist;
  // nullopt where the log is the server's (PostgreSQL). Reads only the file's size: safe
  // beside every other call.
  virtual std::optional<int64_t> WalBytes() { return std::nullopt; }
};

// The whole inbox: every role. What OpenInbox returns and the backends implement.
class Inbox : public EventStore, public JobQueue, public HandlerStates, public InboxAdmin {
 public:
  ~Inbox() override = default;
};

struct InboxOptions {
  std::string database;  // SQLite file path, or a postgres:// / postgresql:// URL
  bool durable = true;   // durability: full (fsync at every commit)
  // `serve` and `migrate`: create the file (SQLite) or the tables (PostgreSQL) if missing and
  // apply the migrations this binary has and the database lacks. false, the operator's verbs:
  // open what exists and only read at open (no write lock, no CREATE privilege, nothing
  // created); a database without hookbox's tables or behind this binary is Unavailable.
  bool create = true;
};

// Opens the backend the database string names; with `create`, brings its schema up to date.
// On PostgreSQL the schema is resolved once, here, and every connection is pinned to it
// (DESIGN.md, "Opening the inbox"). Unavailable when the database cannot be opened, migrated
// or (without `create`) used as it is.
StatusOr<std::unique_ptr<Inbox>> OpenInbox(const InboxOptions& options,
                                           std::vector<std::string>* applied_migrations = nullptr);

// The database setting as logs may show it: a PostgreSQL URL's password masked.
std::string DatabaseForLogs(const std::string& database);

// Whether `database` names the PostgreSQL backend (a postgres:// or postgresql:// URL),
// the one OpenInbox opens for it; anything else is a SQLite file. For what the callers
// size or refuse by backend (descriptors, `hookbox backup`), without knowing postgres/.
bool IsPostgresDatabase(std::string_view database);

}  // namespace hookbox
