// The bulk verbs (inbox_admin.h, BulkRequest), once for both dialects (see sql_inbox.h): the plan,
// counted as of one moment, and the act of RetryDead, RetryWaiting and Replay.
//
// The act reads the jobs to act on at once (their ids, in received order), then changes them
// a chunk per statement: one UPDATE over the chunk's (job id, due time) pairs, passed as one
// JSON array, each job by a compare-and-swap on the status it was read in (a job that
// changed since, or is leased, is left alone), RETURNING the rows whose job changed; then one
// UPDATE of those rows' status. Each write transaction takes the locks every transaction
// takes, in the same order: the claim locks of the chunk's resources (a re-armed job may head
// its resource again, so no claim may decide on the old state, as in Retry), the jobs rows,
// the inbox rows in ascending id order.
//
// How much one write transaction takes is the dialect's (SqlSpelling::bulk_hold):
// - SQLite: chunks of at most kBulkChunk, until the transaction has held the write lock for
//   bulk_hold (8 ms), then a gap of kBulkGap (3 ms) with the lock free. Run as `hookbox inbox
//   retry` beside the daemon, the act shares the write lock with the daemon's accepts: an
//   accept waits at most one transaction (and our commit) behind it, and between two a
//   daemon writer that waited gets the lock (it polls every millisecond). The time it holds
//   the lock, not a count, bounds the wait, on any disk and any size of row. The two
//   figures are measured against the accepts' p99 and the retry's time (bench/RESULTS.md,
//   "After an outage").
// - PostgreSQL (bulk_hold 0): one chunk of `batch` jobs per transaction, no gap: its row
//   locks leave the other rows' accepts free.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/status_macros.h"
#include "inbox/sql_inbox.h"
#include "ops/log.h"

namespace hookbox {
namespace {

constexpr size_t kBulkChunk = 200;
constexpr auto kBulkGap = std::chrono::milliseconds(3);

Status CheckBulk(const BulkRequest& r) {
  if (r.verb == BulkVerb::kReplay && r.filter.handler.empty()) {
    return Status::InvalidArgument("replay needs a handler", "name it with --handler");
  }
  if (r.rate < 0) return Status::InvalidArgument("bad rate", "the rate must be positive");
  return Status::Ok();
}

// The filter's condition on inbox's columns, its handler left out ("": none). The handler is
// a condition on the jobs; the plan counts the rows without a job of it as skipped (and stale
// and ignored rows, which have no jobs at all).
std::string RowCondition(const BulkRequest& r, SqlDialect dialect, std::vector<SqlValue>* params) {
  EventFilter rows = r.filter;
  rows.handler.clear();
  return FilterCondition(rows, dialect, params);
}

// The status a verb's jobs are in: the compare-and-swap's old value.
const char* FromStatus(BulkVerb verb) {
  switch (verb) {
    case BulkVerb::kReplay:
      return "done";
    case BulkVerb::kRetryWaiting:
      return "pending";
    case BulkVerb::kRetryDead:
      break;
  }
  return "dead";
}

// A pending job waiting in backoff (retry --waiting), as `<table>.`: tried before, due after
// `now` (its parameter $<now>), and not held for a missing handler (kHeldUntil, $<held>).
std::string WaitingCondition(const std::string& table, size_t now, size_t held) {
  return " AND " + table + ".attempts > 0 AND " + table + ".next_attempt_at > $" +
         std::to_string(now) + "::timestamptz AND " + table + ".next_attempt_at <> $" +
         std::to_string(held) + "::timestamptz";
}

// The jobs the verb acts on, as `j`, with their rows as `i`: dead ones (retry --dead), ones
// waiting in backoff (retry --waiting), of filter.handler only when set, or filter.handler's
// done ones (replay), of matching rows.
std::string BulkJobsTail(const BulkRequest& r, SqlDialect dialect, std::vector<SqlValue>* params) {
  const char mark = dialect == SqlDialect::kSqlite ? '?' : '$';
  std::string sql = " FROM jobs j JOIN inbox i ON i.id = j.inbox_id WHERE j.status = '";
  sql += FromStatus(r.verb);
  sql += "'";
  if (r.verb == BulkVerb::kRetryWaiting) {
    params->emplace_back(FormatTime(r.now));
    params->emplace_back(std::string(kHeldUntil));
    sql += WaitingCondition("j", params->size() - 1, params->size());
  }
  if (!r.filter.handler.empty()) {
    params->emplace_back(r.filter.handler);
    sql += std::string(" AND j.handler = ") + mark + std::to_string(params->size());
  }
  // The filter in a subquery of its own: its conditions name inbox's columns unqualified,
  // which jobs also has (id, status, handler).
  const std::string condition = RowCondition(r, dialect, params);
  if (!condition.empty()) sql += " AND i.id IN (SELECT id FROM inbox WHERE " + condition + ")";
  return sql;
}

// When the i-th re-armed job (from 0, in received order) is due.
TimePoint BulkDueAt(const BulkRequest& r, int64_t i) {
  if (r.rate <= 0) return r.now;
  const double seconds = static_cast<double>(i) / r.rate;
  return r.now +
         std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(seconds));
}

// What the act's write transactions did, for its log line.
struct BulkWrites {
  int64_t rearmed = 0;
  int64_t transactions = 0;
  std::chrono::steady_clock::duration held{};
  std::chrono::steady_clock::duration longest{};
};

void LogBulkWrites(const BulkRequest& r, size_t jobs, const BulkWrites& w) {
  using Ms = std::chrono::duration<double, std::milli>;
  LogInfo({{"msg", "bulk writes"},
           {"verb", BulkVerbName(r.verb)},
           {"jobs", jobs},
           {"rearmed", w.rearmed},
           {"transactions", w.transactions},
           {"held_ms", Ms(w.held).count()},
           {"longest_hold_ms", Ms(w.longest).count()}});
}

}  // namespace

StatusOr<BulkPlan> SqlInbox::PlanBulk(const BulkRequest& r) {
  RETURN_IF_ERROR(CheckBulk(r));
  std::vector<SqlValue> rows_params, jobs_params;
  const std::string condition = RowCondition(r, d_.dialect, &rows_params);
  const std::string rows = " FROM inbox" + (condition.empty() ? "" : " WHERE " + condition);
  const std::string jobs = BulkJobsTail(r, d_.dialect, &jobs_params);
  const SqlArgs rows_args = ArgsOf(rows_params), jobs_args = ArgsOf(jobs_params);
  return ReadInto<BulkPlan>(*this, TxKind::kSnapshot, [&](SqlTx& tx, BulkPlan& plan) -> Status {
    ASSIGN_OR_RETURN(const SqlRows& by_status,
                     tx.Query("SELECT status, count(*)" + rows + " GROUP BY status", rows_args));
    for (size_t i = 0; i < by_status.size(); ++i) {
      const int64_t n = by_status.Int(i, 1);
      plan.matched += n;
      if (by_status.Text(i, 0) == "stale") plan.skipped_stale += n;
      if (by_status.Text(i, 0) == "ignored") plan.skipped_ignored += n;
    }
    ASSIGN_OR_RETURN(const SqlRows& by_handler,
                     tx.Query("SELECT i.endpoint, j.handler, count(*)" + jobs +
                                  " GROUP BY i.endpoint, j.handler",
                              jobs_args));
    for (size_t i = 0; i < by_handler.size(); ++i) {
      plan.jobs_by_handler[by_handler.Text(i, 0) + "/" + by_handler.Text(i, 1)] =
          by_handler.Int(i, 2);
      plan.jobs += by_handler.Int(i, 2);
    }
    ASSIGN_OR_RETURN(const SqlRows& span, tx.Query("SELECT count(DISTINCT j.inbox_id), " +
                                                       d_.Time("min(i.received_at)") + ", " +
                                                       d_.Time("max(i.received_at)") + jobs,
                                                   jobs_args));
    plan.rows = span.Int(0, 0);
    plan.oldest = span.Text(0, 1);
    plan.newest = span.Text(0, 2);
    plan.skipped_no_job =
        std::max<int64_t>(0, plan.matched - plan.skipped_stale - plan.skipped_ignored - plan.rows);
    return Status::Ok();
  });
}

StatusOr<int64_t> SqlInbox::RetryDead(const BulkRequest& r) { return ActBulk(r); }
StatusOr<int64_t> SqlInbox::RetryWaiting(const BulkRequest& r) { return ActBulk(r); }
StatusOr<int64_t> SqlInbox::Replay(const BulkRequest& r) { return ActBulk(r); }

StatusOr<std::vector<SqlInbox::BulkTarget>> SqlInbox::BulkTargets(const BulkRequest& r) {
  std::vector<SqlValue> p;
  const std::string select = std::string("SELECT j.id, j.inbox_id") +
                             (d_.row_locks ? ", i.endpoint, i.resource_id" : "") +
                             BulkJobsTail(r, d_.dialect, &p) + " ORDER BY i.id, j.id";
  return ReadInto<std::vector<BulkTarget>>(
      *this, TxKind::kRead, [&](SqlTx& tx, std::vector<BulkTarget>& out) -> Status {
        ASSIGN_OR_RETURN(const SqlRows& q, tx.Query(select, ArgsOf(p)));
        out.reserve(q.size());
        for (size_t i = 0; i < q.size(); ++i) {
          const bool keyed = d_.row_locks && !q.Text(i, 3).empty();
          out.push_back({q.Int(i, 0), q.Int(i, 1),
                         keyed ? ResourceKey(q.Text(i, 2), q.Text(i, 3)) : std::string()});
        }
        return Status::Ok();
      });
}

StatusOr<int64_t> SqlInbox::ActBulk(const BulkRequest& r) {
  RETURN_IF_ERROR(CheckBulk(r));
  ASSIGN_OR_RETURN(const std::vector<BulkTarget> targets, BulkTargets(r));
  const size_t batch = static_cast<size_t>(std::max(1, r.batch));
  const size_t chunk = d_.bulk_hold.count() > 0 ? std::min(kBulkChunk, batch) : batch;
  BulkWrites w;
  size_t next = 0;
  while (next < targets.size()) {
    size_t done_to = next;
    int64_t changed = 0;
    std::chrono::steady_clock::duration took{};
    const Status s = Transact(TxKind::kWrite, [&](SqlTx& tx) -> Status {
      // Timed from here: on SQLite the write lock is ours from BEGIN IMMEDIATE on.
      const auto started = std::chrono::steady_clock::now();
      done_to = next;
      changed = 0;
      std::chrono::steady_clock::duration last{};
      do {
        const auto chunk_started = std::chrono::steady_clock::now();
        const size_t to = std::min(targets.size(), done_to + chunk);
        RETURN_IF_ERROR(RearmChunk(tx, r, targets, done_to, to, &changed));
        done_to = to;
        last = std::chrono::steady_clock::now() - chunk_started;
      } while (done_to < targets.size() &&
               std::chrono::steady_clock::now() - started + last <= d_.bulk_hold);
      took = std::chrono::steady_clock::now() - started;
      return Status::Ok();
    });
    RETURN_IF_ERROR(s);
    next = done_to;
    w.rearmed += changed;
    ++w.transactions;
    w.held += took;
    w.longest = std::max(w.longest, took);
    if (next < targets.size() && d_.bulk_hold.count() > 0) std::this_thread::sleep_for(kBulkGap);
  }
  if (!targets.empty()) LogBulkWrites(r, targets.size(), w);
  return w.rearmed;
}

// One chunk, targets [from, to): the claim locks of its resources, its jobs by the
// compare-and-swap, then its rows. Adds the jobs changed to *changed.
Status SqlInbox::RearmChunk(SqlTx& tx, const BulkRequest& r, const std::vector<BulkTarget>& targets,
                            size_t from, size_t to, int64_t* changed) {
  const bool replay = r.verb == BulkVerb::kReplay;
  const bool waiting = r.verb == BulkVerb::kRetryWaiting;
  const char* from_status = FromStatus(r.verb);
  std::set<std::string> resources;
  const std::string due_now = FormatTime(r.now);
  nlohmann::json due = nlohmann::json::array();  // [[job id, "due time"], ...]
  for (size_t i = from; i < to; ++i) {
    if (!targets[i].resource_key.empty()) resources.insert(targets[i].resource_key);
    due.push_back(
        {targets[i].job, r.rate > 0 ? FormatTime(BulkDueAt(r, static_cast<int64_t>(i))) : due_now});
  }
  const std::string pairs = JsonText(due);
  for (const std::string& key : resources) RETURN_IF_ERROR(LockKey(tx, KeyLock::kClaim, key));
  // The pairs drive the join, each job found by its id. On SQLite `+status` keeps the status
  // test off the jobs_due index: with it, SQLite's planner (no ANALYZE statistics) prefers
  // walking every dead job in jobs_due for each chunk, which makes a bulk retry quadratic in
  // the number of dead jobs.
  const std::string chunk_jobs = std::string("SELECT (value->>0)::bigint AS id,") +
                                 " (value->>1)::timestamptz AS due FROM " + d_.json_rows;
  if (d_.row_locks) {
    RETURN_IF_ERROR(tx.Run("SELECT id FROM jobs WHERE id IN (SELECT id FROM (" + chunk_jobs +
                               ") AS p) AND status = $2 ORDER BY id FOR UPDATE",
                           {pairs, from_status}));
  }
  // A waiting job keeps its attempt budget and its row (pending already): only its due time
  // comes forward, if it is still waiting (the claim may have taken it since it was read).
  ASSIGN_OR_RETURN(
      const SqlRows& moved,
      tx.Query(std::string("UPDATE jobs SET ") +
                   (waiting ? "next_attempt_at = p.due"
                            : "status = 'pending', attempts = 0, next_attempt_at = p.due,"
                              " sync = false") +
                   (replay ? ", generation = generation + 1, last_error = NULL" : "") + " FROM (" +
                   chunk_jobs + ") AS p WHERE jobs.id = p.id AND " + d_.no_index +
                   "jobs.status = $2" + (waiting ? WaitingCondition("jobs", 3, 4) : "") +
                   " RETURNING jobs.inbox_id",
               waiting ? SqlArgs{pairs, from_status, due_now, std::string(kHeldUntil)}
                       : SqlArgs{pairs, from_status}));
  *changed += static_cast<int64_t>(moved.size());
  if (waiting) return Status::Ok();
  std::set<int64_t> rows;  // each once, in id order: the order rows are locked in
  for (size_t i = 0; i < moved.size(); ++i) rows.insert(moved.Int(i, 0));
  if (rows.empty()) return Status::Ok();
  const std::string ids = JsonText(rows);
  const std::string chunk_rows = std::string("SELECT value::bigint FROM ") + d_.json_rows;
  if (d_.row_locks) {
    RETURN_IF_ERROR(tx.Run(
        "SELECT id FROM inbox WHERE id IN (" + chunk_rows + ") ORDER BY id FOR UPDATE", {ids}));
  }
  // Pending again, unless another job of the row stays dead (a retry of one handler).
  return tx.Run(
      "UPDATE inbox SET status = CASE WHEN EXISTS (SELECT 1 FROM jobs"
      " WHERE jobs.inbox_id = inbox.id AND jobs.status = 'dead') THEN 'dead' ELSE 'pending' END,"
      " processed_at = NULL WHERE id IN (" +
          chunk_rows + ")",
      {ids});
}

}  // namespace hookbox
