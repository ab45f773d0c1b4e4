// InboxAdmin, the inbox's role for the operator: the reads (list, show, stats, dead jobs),
// the verbs (retry, clear, the bulk retry and replay, purge) and the checks /readyz and the
// metrics make. Used by the CLI, the console and the purge. Thread-safe: any thread, at the
// same time.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "inbox/filter.h"
#include "ops/clock.h"

namespace hookbox {

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

}  // namespace hookbox
