// The operator's verbs and reads, once for both dialects (see sql_inbox.h): retry, clear,
// held jobs, reassign and drop, forgetting a gone handler's state, leases, the lists and counts,
// and the purge with its pacing.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/status_macros.h"
#include "inbox/purge_pace.h"
#include "inbox/sql_inbox.h"

namespace hookbox {

const SqlSpelling kSqliteSpelling = {
    .dialect = SqlDialect::kSqlite,
    .row_locks = false,
    .greatest = "max",
    .real = "REAL",
    .jobs_inbox = "CROSS JOIN",
    .not_sync = "j.sync = 0",
    .due_order = "j.next_attempt_at, j.id",
    .skip_locked = "",
    .json_rows = "json_each($1)",
    .no_index = "+",
    .lock_key = "",
    .try_lock_key = "",
    .bulk_hold = std::chrono::milliseconds(8),
};
const SqlSpelling kPostgresSpelling = {
    .dialect = SqlDialect::kPostgres,
    .row_locks = true,
    .greatest = "greatest",
    .real = "double precision",
    .jobs_inbox = "JOIN",
    .not_sync = "NOT j.sync",
    .due_order = "j.status, j.next_attempt_at, j.id",
    .skip_locked = " FOR UPDATE OF j SKIP LOCKED",
    .json_rows = "unnest(ARRAY(SELECT jsonb_array_elements($1::jsonb))) AS e (value)",
    .no_index = "",
    .lock_key = "SELECT pg_advisory_xact_lock(hashtextextended($1::text, $2::bigint))",
    .try_lock_key = "SELECT pg_try_advisory_xact_lock(hashtextextended($1::text, $2::bigint))",
    .bulk_hold = std::chrono::milliseconds(0),
};

std::string SqlSpelling::Time(const std::string& column) const {
  if (dialect == SqlDialect::kSqlite) return column;
  return "to_char(" + column + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";
}

std::string RowColumns(const SqlSpelling& d) {
  return "id, endpoint, event_id, id_source, event_type, resource_id, sequence, body_sha256,"
         " headers, status, " +
         d.Time("received_at") + ", " + d.Time("processed_at") + ", duplicates, " +
         d.Time("last_duplicate_at");
}

InboxRow ReadRow(const SqlRows& q, size_t row) {
  InboxRow r;
  r.id = q.Int(row, 0);
  r.endpoint = q.Text(row, 1);
  r.event_id = q.Text(row, 2);
  r.id_source = q.Text(row, 3);
  r.event_type = q.Text(row, 4);
  r.resource_id = q.Text(row, 5);
  r.sequence = q.Text(row, 6);
  r.body_sha256 = q.Text(row, 7);
  r.headers_json = q.Text(row, 8);
  r.status = q.Text(row, 9);
  r.received_at = q.Text(row, 10);
  r.processed_at = q.Text(row, 11);
  r.duplicates = q.Int(row, 12);
  r.last_duplicate_at = q.Text(row, 13);
  return r;
}

SqlArgs ArgsOf(const std::vector<SqlValue>& values) {
  SqlArgs args;
  for (const SqlValue& v : values) std::visit([&](const auto& x) { args.emplace_back(x); }, v);
  return args;
}

namespace {

Status NoSuchEvent(const std::string& endpoint, const std::string& event_id) {
  return Status::NotFound("no such event", endpoint + " " + event_id);
}

// The jobs in id order: the order every transaction that changes several jobs locks them in.
std::vector<const ClaimedJob*> InIdOrder(std::span<const ClaimedJob> jobs) {
  std::vector<const ClaimedJob*> sorted;
  for (const ClaimedJob& job : jobs) sorted.push_back(&job);
  std::sort(sorted.begin(), sorted.end(),
            [](const ClaimedJob* a, const ClaimedJob* b) { return a->job_id < b->job_id; });
  return sorted;
}

}  // namespace

StatusOr<SqlRows> FindEvent(SqlTx& tx, const std::string& columns, const std::string& endpoint,
                            const std::string& event_id) {
  ASSIGN_OR_RETURN(
      SqlRows q, tx.Query("SELECT " + columns + " FROM inbox WHERE endpoint = $1 AND event_id = $2",
                          {endpoint, event_id}));
  if (q.empty()) return NoSuchEvent(endpoint, event_id);
  return q;
}

StatusOr<int> SqlInbox::Retry(const std::string& endpoint, const std::string& event_id,
                              TimePoint now) {
  return ReadInto<int>(*this, TxKind::kWrite, [&](SqlTx& tx, int& rearmed) -> Status {
    ASSIGN_OR_RETURN(const SqlRows& row, FindEvent(tx, "id, resource_id", endpoint, event_id));
    const int64_t inbox_id = row.Int(0, 0);
    // A re-armed job may head its resource again: no claim may decide on the old state.
    if (const std::string& resource = row.Text(0, 1); !resource.empty()) {
      RETURN_IF_ERROR(LockKey(tx, KeyLock::kClaim, ResourceKey(endpoint, resource)));
    }
    // The row's jobs locked in id order, as the purge and the bulk verbs take them, so that a
    // purge of a row with several jobs and this retry never wait for each other in a cycle.
    RETURN_IF_ERROR(tx.Run(
        std::string("SELECT id FROM jobs WHERE inbox_id = $1 ORDER BY id") + d_.Lock(" FOR UPDATE"),
        {inbox_id}));
    ASSIGN_OR_RETURN(
        const SqlRows& up,
        tx.Query(
            "UPDATE jobs SET status = 'pending', attempts = 0, next_attempt_at = $1, sync = false"
            " WHERE inbox_id = $2 AND status = 'dead'",
            {FormatTime(now), inbox_id}));
    rearmed = static_cast<int>(up.changed);
    if (rearmed == 0) {
      return Status::InvalidArgument("no dead job to retry", endpoint + " " + event_id);
    }
    return tx.Run("UPDATE inbox SET status = 'pending', processed_at = NULL WHERE id = $1",
                  {inbox_id});
  });
}

Status SqlInbox::HoldForHandler(const std::vector<ClaimedJob>& jobs, TimePoint /*now*/) {
  return Transact(TxKind::kWrite, [&](SqlTx& tx) -> Status {
    for (const ClaimedJob* job : InIdOrder(jobs)) {
      ASSIGN_OR_RETURN(
          const SqlRows& held,
          tx.Query(
              std::string("UPDATE jobs SET status = 'pending', attempts = ") + d_.greatest +
                  "(attempts - 1, 0), next_attempt_at = $1, last_error = $2,"
                  " lease_owner = NULL, lease_token = NULL, lease_until = NULL"
                  " WHERE id = $3 AND lease_token = $4 AND status = 'processing'",
              {std::string(kHeldUntil), HeldReason(job->handler), job->job_id, job->lease_token}));
      if (held.changed == 0) continue;  // lease lost: its new owner decides
      RETURN_IF_ERROR(tx.Run("DELETE FROM attempts WHERE id = $1", {job->attempt_id}));
    }
    return Status::Ok();
  });
}

StatusOr<int64_t> SqlInbox::ReleaseHeld(const std::vector<HandlerRef>& handlers, TimePoint now) {
  return ReadInto<int64_t>(*this, TxKind::kWrite, [&](SqlTx& tx, int64_t& released) -> Status {
    for (const HandlerRef& h : handlers) {
      ASSIGN_OR_RETURN(
          const SqlRows& up,
          tx.Query(
              "UPDATE jobs SET next_attempt_at = $1, last_error = NULL"
              " WHERE status = 'pending' AND next_attempt_at = $2 AND handler = $3"
              " AND EXISTS (SELECT 1 FROM inbox i WHERE i.id = jobs.inbox_id AND i.endpoint = $4)",
              {FormatTime(now), std::string(kHeldUntil), h.handler, h.endpoint}));
      released += up.changed;
    }
    return Status::Ok();
  });
}

StatusOr<std::vector<HandlerBacklog>> SqlInbox::UnfinishedByHandler() {
  return ReadRows<HandlerBacklog>(
      *this,
      "SELECT i.endpoint, j.handler, count(*),"
      " count(*) FILTER (WHERE j.next_attempt_at = $1::timestamptz)"
      " FROM jobs j JOIN inbox i ON i.id = j.inbox_id WHERE j.status IN ('pending', 'processing')"
      " GROUP BY i.endpoint, j.handler ORDER BY i.endpoint, j.handler",
      {std::string(kHeldUntil)}, [](const SqlRows& q, size_t i) {
        return HandlerBacklog{q.Text(i, 0), q.Text(i, 1), q.Int(i, 2), q.Int(i, 3)};
      });
}

StatusOr<ReassignCounts> SqlInbox::Reassign(const std::string& endpoint, const std::string& from,
                                            const std::string& to, TimePoint now) {
  return ReadInto<ReassignCounts>(
      *this, TxKind::kWrite, [&](SqlTx& tx, ReassignCounts& counts) -> Status {
        ASSIGN_OR_RETURN(
            const SqlRows& moved,
            tx.Query(
                "UPDATE jobs SET handler = $1,"
                " last_error = CASE WHEN next_attempt_at = $2 THEN NULL ELSE last_error END,"
                " next_attempt_at = CASE WHEN next_attempt_at = $2 THEN $3::timestamptz"
                "   ELSE next_attempt_at END"
                " WHERE handler = $4 AND status IN ('pending', 'dead')"
                " AND EXISTS (SELECT 1 FROM inbox i WHERE i.id = jobs.inbox_id AND i.endpoint = $5)"
                " AND NOT EXISTS (SELECT 1 FROM jobs j2"
                "   WHERE j2.inbox_id = jobs.inbox_id AND j2.handler = $1)",
                {to, std::string(kHeldUntil), FormatTime(now), from, endpoint}));
        counts.moved = moved.changed;
        ASSIGN_OR_RETURN(
            const SqlRows& kept,
            tx.Query("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                     " WHERE i.endpoint = $1 AND j.handler = $2 AND j.status <> 'done'",
                     {endpoint, from}));
        counts.kept = kept.Int(0, 0);
        return Status::Ok();
      });
}

StatusOr<int64_t> SqlInbox::DropJobs(const std::string& endpoint, const std::string& handler,
                                     TimePoint now) {
  return ReadInto<int64_t>(*this, TxKind::kWrite, [&](SqlTx& tx, int64_t& dropped) -> Status {
    // Jobs rows first (the lock order), then their inbox rows in id order.
    ASSIGN_OR_RETURN(
        const SqlRows& del,
        tx.Query("DELETE FROM jobs WHERE handler = $2 AND status IN ('pending', 'dead')"
                 " AND inbox_id IN (SELECT id FROM inbox WHERE endpoint = $1) RETURNING inbox_id",
                 {endpoint, handler}));
    dropped = static_cast<int64_t>(del.size());
    std::map<int64_t, std::string> rows;
    for (size_t i = 0; i < del.size(); ++i) rows.emplace(del.Int(i, 0), FormatTime(now));
    return rows.empty() ? Status::Ok() : SettleRows(tx, rows);
  });
}

// A job whose token no longer holds fails the transaction, so no lease changes.
Status SqlInbox::RenewLeases(std::span<const ClaimedJob> jobs, TimePoint now,
                             std::chrono::milliseconds lease) {
  if (jobs.empty()) return Status::Ok();
  const std::string until = FormatTime(now + lease);
  return Transact(TxKind::kWrite, [&](SqlTx& tx) -> Status {
    for (const ClaimedJob* job : InIdOrder(jobs)) {
      ASSIGN_OR_RETURN(
          const SqlRows& up,
          tx.Query("UPDATE jobs SET lease_until = $1 WHERE id = $2 AND lease_token = $3"
                   " AND status = 'processing'",
                   {until, job->job_id, job->lease_token}));
      if (up.changed == 0) return LeaseLost(*job);
    }
    return Status::Ok();
  });
}

// ---- Reads ----

// A read of hookbox's own table: the database answers, and holds the inbox.
Status SqlInbox::Ping() {
  return Transact(TxKind::kRead,
                  [](SqlTx& tx) { return tx.Run("SELECT count(*) FROM schema_migrations"); });
}

StatusOr<std::vector<InboxRow>> SqlInbox::List(const ListFilter& f) {
  std::vector<SqlValue> values;
  const std::string sql = "SELECT " + RowColumns(d_) + ListQueryTail(f, d_.dialect, &values);
  return ReadRows<InboxRow>(*this, sql, ArgsOf(values), ReadRow);
}

StatusOr<int64_t> SqlInbox::Count(const ListFilter& f) {
  std::vector<SqlValue> values;
  const std::string sql = "SELECT count(*)" + ListQueryFrom(f, d_.dialect, &values);
  return ReadInto<int64_t>(*this, TxKind::kRead, [&](SqlTx& tx, int64_t& n) -> Status {
    ASSIGN_OR_RETURN(const SqlRows& q, tx.Query(sql, ArgsOf(values)));
    n = q.Int(0, 0);
    return Status::Ok();
  });
}

StatusOr<std::vector<DeadJob>> SqlInbox::DeadJobsOf(std::span<const int64_t> inbox_ids) {
  if (inbox_ids.empty()) return std::vector<DeadJob>{};
  const nlohmann::json ids(std::vector<int64_t>(inbox_ids.begin(), inbox_ids.end()));
  return ReadRows<DeadJob>(
      *this,
      std::string("SELECT inbox_id, id, handler, coalesce(last_error, ''), attempts FROM jobs"
                  " WHERE status = 'dead' AND inbox_id IN (SELECT value::bigint FROM ") +
          d_.json_rows + ") ORDER BY inbox_id, id",
      {JsonText(ids)}, [](const SqlRows& q, size_t i) {
        DeadJob dead;
        dead.row.id = q.Int(i, 0);
        dead.job_id = q.Int(i, 1);
        dead.handler = q.Text(i, 2);
        dead.last_error = q.Text(i, 3);
        dead.attempts = q.Int(i, 4);
        return dead;
      });
}

StatusOr<std::vector<HandlerRef>> SqlInbox::KnownHandlers() {
  return ReadRows<HandlerRef>(*this,
                              "SELECT i.endpoint, j.handler FROM jobs j JOIN inbox i"
                              " ON i.id = j.inbox_id UNION SELECT endpoint, handler"
                              " FROM handler_state ORDER BY 1, 2",
                              {}, [](const SqlRows& q, size_t i) {
                                return HandlerRef{q.Text(i, 0), q.Text(i, 1)};
                              });
}

StatusOr<bool> SqlInbox::ForgetHandler(const HandlerRef& h) {
  return ReadInto<bool>(*this, TxKind::kWrite, [&](SqlTx& tx, bool& forgot) -> Status {
    ASSIGN_OR_RETURN(const SqlRows& gone,
                     tx.Query("DELETE FROM handler_state WHERE endpoint = $1 AND handler = $2",
                              {h.endpoint, h.handler}));
    forgot = gone.changed > 0;
    return Status::Ok();
  });
}

StatusOr<std::vector<DeadJob>> SqlInbox::DeadJobs(int64_t before_job_id, int limit) {
  return ReadRows<DeadJob>(
      *this,
      "SELECT " + RowColumns(d_) +
          ", job_id, handler, coalesce(last_error, ''), attempts FROM inbox JOIN"
          " (SELECT id AS job_id, inbox_id, handler, last_error, attempts FROM jobs"
          " WHERE status = 'dead' AND ($1 = 0 OR id < $1)) j"
          " ON j.inbox_id = inbox.id ORDER BY job_id DESC LIMIT $2",
      {before_job_id, int64_t{limit}}, [](const SqlRows& q, size_t i) {
        return DeadJob{ReadRow(q, i), q.Int(i, 14), q.Text(i, 15), q.Text(i, 16), q.Int(i, 17)};
      });
}

// One snapshot: the row, its jobs and their attempts as of one moment.
StatusOr<InboxDetail> SqlInbox::Show(const std::string& endpoint, const std::string& event_id) {
  return ReadInto<InboxDetail>(*this, TxKind::kSnapshot, [&](SqlTx& tx, InboxDetail& d) {
    return ShowInto(tx, endpoint, event_id, &d);
  });
}

Status SqlInbox::ShowInto(SqlTx& tx, const std::string& endpoint, const std::string& event_id,
                          InboxDetail* d) {
  ASSIGN_OR_RETURN(const SqlRows& q, FindEvent(tx, RowColumns(d_) + ", body", endpoint, event_id));
  d->row = ReadRow(q, 0);
  d->row.body = q.Text(0, 14);
  ASSIGN_OR_RETURN(
      const SqlRows& jq,
      tx.Query("SELECT id, handler, status, " + d_.Time("next_attempt_at") + ", lease_owner, " +
                   d_.Time("lease_until") +
                   ", last_error, attempts, generation FROM jobs WHERE inbox_id = $1 ORDER BY id",
               {d->row.id}));
  for (size_t i = 0; i < jq.size(); ++i) {  // JobRow's members in order, its attempts to come
    d->jobs.push_back({jq.Int(i, 0), jq.Text(i, 1), jq.Text(i, 2), jq.Text(i, 3), jq.Text(i, 4),
                       jq.Text(i, 5), jq.Text(i, 6), jq.Int(i, 7), jq.Int(i, 8)});
  }
  for (JobRow& j : d->jobs) {
    ASSIGN_OR_RETURN(
        const SqlRows& aq,
        tx.Query("SELECT number, " + d_.Time("started_at") + ", " + d_.Time("finished_at") +
                     ", coalesce(outcome, ''), detail, generation"
                     " FROM attempts WHERE job = $1 ORDER BY number",
                 {j.id}));
    for (size_t i = 0; i < aq.size(); ++i) {
      j.attempt_rows.push_back(
          {aq.Int(i, 0), aq.Int(i, 5), aq.Text(i, 1), aq.Text(i, 2), aq.Text(i, 3), aq.Text(i, 4)});
    }
  }
  return Status::Ok();
}

Status SqlInbox::Clear(const std::string& endpoint, const std::string& event_id, TimePoint now) {
  return Transact(TxKind::kWrite, [&](SqlTx& tx) -> Status {
    ASSIGN_OR_RETURN(const SqlRows& row, FindEvent(tx, "id", endpoint, event_id));
    // A sync claim's test (EventBusy): a live lease, or on PostgreSQL a job row locked by the
    // request running it (HoldJobs), refused at once, not after the pool's lock_timeout. Its
    // unfinished jobs stay locked (on SQLite, the writer's transaction), so none can be
    // claimed before the delete; the row goes with its jobs and attempts.
    bool busy = false;
    const Status unfinished = EventBusy(tx, row.Int(0, 0), FormatTime(now), &busy);
    if (busy) return ClearRefused(endpoint, event_id);
    RETURN_IF_ERROR(unfinished);
    ASSIGN_OR_RETURN(const SqlRows& del,
                     tx.Query("DELETE FROM inbox WHERE id = $1", {row.Int(0, 0)}));
    return del.changed == 0 ? NoSuchEvent(endpoint, event_id) : Status::Ok();  // cleared meanwhile
  });
}

StatusOr<InboxStats> SqlInbox::Stats() {
  return ReadInto<InboxStats>(*this, TxKind::kRead, [&](SqlTx& tx, InboxStats& stats) -> Status {
    ASSIGN_OR_RETURN(
        const SqlRows& q,
        tx.Query("SELECT endpoint, status, count(*) FROM inbox GROUP BY endpoint, status"));
    for (size_t i = 0; i < q.size(); ++i) stats[q.Text(i, 0)][q.Text(i, 1)] = q.Int(i, 2);
    return Status::Ok();
  });
}

StatusOr<QueueStats> SqlInbox::Queue(bool count_done) {
  return ReadInto<QueueStats>(*this, TxKind::kRead, [&](SqlTx& tx, QueueStats& stats) -> Status {
    ASSIGN_OR_RETURN(const SqlRows& jobs, tx.Query(QueueCountSql(count_done)));
    for (size_t i = 0; i < jobs.size(); ++i) stats.jobs_by_status[jobs.Text(i, 0)] = jobs.Int(i, 1);
    ASSIGN_OR_RETURN(const SqlRows& oldest,
                     tx.Query("SELECT " + d_.Time("min(i.received_at)") +
                              " FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                              " WHERE j.status IN ('pending', 'processing')"));
    stats.oldest_unfinished_received_at = oldest.Text(0, 0);
    return Status::Ok();
  });
}

StatusOr<std::vector<HandlerStatus>> SqlInbox::Handlers(TimePoint now, bool count_jobs) {
  // Per handler: waiting, due, running, dead, and when its oldest due job became due (the
  // backlog's age). Due: pending and past its next attempt time.
  const std::string counts =
      "SELECT i.endpoint, j.handler,"
      " count(*) FILTER (WHERE j.status = 'pending' AND j.next_attempt_at > $1::timestamptz),"
      " count(*) FILTER (WHERE j.status = 'pending' AND j.next_attempt_at <= $1::timestamptz),"
      " count(*) FILTER (WHERE j.status = 'processing'), count(*) FILTER (WHERE j.status = 'dead'),"
      " " +
      d_.Time(
          "min(j.next_attempt_at)"
          " FILTER (WHERE j.status = 'pending' AND j.next_attempt_at <= $1::timestamptz)") +
      " FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
      " WHERE j.status IN ('pending', 'processing', 'dead') GROUP BY i.endpoint, j.handler";
  using Out = std::vector<HandlerStatus>;
  return ReadInto<Out>(*this, TxKind::kRead, [&](SqlTx& tx, Out& out) -> Status {
    std::map<HandlerKey, HandlerStatus> by;
    ASSIGN_OR_RETURN(const SqlRows& q,
                     tx.Query("SELECT " + StateColumns() + " FROM handler_state"));
    for (size_t i = 0; i < q.size(); ++i) {
      HandlerState st = ReadState(q, i);
      by[{st.endpoint, st.handler}].state = std::move(st);
    }
    if (count_jobs) {
      ASSIGN_OR_RETURN(const SqlRows& n, tx.Query(counts, {FormatTime(now)}));
      for (size_t i = 0; i < n.size(); ++i) {
        HandlerStatus& h = by[{n.Text(i, 0), n.Text(i, 1)}];
        h.pending = n.Int(i, 2);
        h.due = n.Int(i, 3);
        h.running = n.Int(i, 4);
        h.dead = n.Int(i, 5);
        h.oldest_due = n.Text(i, 6);
      }
    }
    for (auto& [key, h] : by) {
      h.state.endpoint = key.first;
      h.state.handler = key.second;
      out.push_back(std::move(h));
    }
    return Status::Ok();
  });
}

// ---- Purge ----

StatusOr<PurgeCounts> SqlInbox::Purge(const PurgeRequest& r) {
  PurgeCounts counts;
  static const std::string kRows = PurgeRowCondition('$', "::timestamptz");
  static const std::string kCount = "SELECT count(*) FROM inbox WHERE " + kRows;
  for (const PurgeTarget& target : PurgeTargets(r, &counts)) {
    const SqlArgs args = {target.status, FormatTime(target.before)};
    ASSIGN_OR_RETURN(*target.count, PurgeRows(r, kCount, args, [&](SqlTx& tx, int64_t batch) {
      return PurgeInboxBatch(tx, args, batch);
    }));
  }
  static const std::string kSequences =
      "DELETE FROM sequences WHERE (endpoint, resource_id) IN"
      " (SELECT endpoint, resource_id FROM sequences WHERE updated_at < $1::timestamptz LIMIT $2)";
  const SqlArgs args = {FormatTime(r.sequences_before)};
  ASSIGN_OR_RETURN(counts.sequences,
                   PurgeRows(r, "SELECT count(*) FROM sequences WHERE updated_at < $1::timestamptz",
                             args, [&](SqlTx& tx, int64_t batch) -> StatusOr<PurgeBatch> {
                               SqlArgs with_batch = args;
                               with_batch.emplace_back(batch);
                               ASSIGN_OR_RETURN(const SqlRows& del,
                                                tx.Query(kSequences, with_batch));
                               return PurgeBatch{del.changed, del.changed};
                             }));
  return counts;
}

// One batch of inbox rows of one status (args: the status and the cutoff): at most `batch`
// rows that PurgeRowCondition selects, deleted with their jobs and attempts, each only if the
// condition still holds when the delete has it.
//
// A retry (Retry, the bulk RearmChunk) re-arms a dead row's jobs and then updates the row, in
// one transaction that locks the jobs and then the row. On SQLite the purge's one statement
// runs in the one writer's transaction: no retry runs between its choice and its delete. On
// PostgreSQL a delete that picked its rows in a subquery, `id IN (SELECT ... LIMIT n)`, waits
// for a retry that holds a row and then deletes the row all the same: after the wait, READ
// COMMITTED re-checks only the outer WHERE on the row's new version, not the subquery's
// condition; and the condition repeated in the outer WHERE still reads the row's jobs as of
// the statement's start (tried: a dead row whose one job a retry had re-armed was deleted
// with it). So the rows are picked first, their jobs locked and then the rows (the order every
// transaction takes them in: a retry running waits for none of ours, we wait for it to end;
// a retry coming later waits for our commit and then finds the jobs gone), and the delete,
// a statement of its own with a snapshot taken after the locks, repeats the whole condition:
// a row a retry has re-armed (pending again, or still dead with a job of it pending) stays.
StatusOr<SqlInbox::PurgeBatch> SqlInbox::PurgeInboxBatch(SqlTx& tx, const SqlArgs& args,
                                                         int64_t batch) {
  static const std::string kRows = PurgeRowCondition('$', "::timestamptz");
  SqlArgs with_batch = args;
  with_batch.emplace_back(batch);
  if (!d_.row_locks) {
    static const std::string kDelete =
        "DELETE FROM inbox WHERE id IN (SELECT id FROM inbox WHERE " + kRows + " LIMIT $3)";
    ASSIGN_OR_RETURN(const SqlRows& del, tx.Query(kDelete, with_batch));
    return PurgeBatch{del.changed, del.changed};
  }
  ASSIGN_OR_RETURN(const SqlRows& picked,
                   tx.Query("SELECT id FROM inbox WHERE " + kRows + " LIMIT $3", with_batch));
  if (picked.empty()) return PurgeBatch{0, 0};
  std::set<int64_t> ids;
  for (size_t i = 0; i < picked.size(); ++i) ids.insert(picked.Int(i, 0));
  const std::string rows = "SELECT value::bigint FROM " + std::string(d_.json_rows);
  const SqlArgs listed = {JsonText(ids)};
  RETURN_IF_ERROR(tx.Run(
      "SELECT id FROM jobs WHERE inbox_id IN (" + rows + ") ORDER BY id FOR UPDATE", listed));
  RETURN_IF_ERROR(
      tx.Run("SELECT id FROM inbox WHERE id IN (" + rows + ") ORDER BY id FOR UPDATE", listed));
  static const std::string kRecheck = PurgeRowCondition('$', "::timestamptz", 2);
  ASSIGN_OR_RETURN(const SqlRows& del,
                   tx.Query("DELETE FROM inbox WHERE id IN (" + rows + ") AND " + kRecheck,
                            {listed[0], args[0], args[1]}));
  return PurgeBatch{static_cast<int64_t>(picked.size()), del.changed};
}

// Counts (dry run) or deletes, one batch per write transaction at the pace of purge_pace.h,
// the rows a purge query selects; `delete_batch` deletes at most the batch size it is given,
// and says how many rows it took up and how many of them it deleted (fewer when some no
// longer qualified).
StatusOr<int64_t> SqlInbox::PurgeRows(const PurgeRequest& r, const std::string& count_sql,
                                      const SqlArgs& args, const PurgeBatchFn& delete_batch) {
  if (r.dry_run) {
    return ReadInto<int64_t>(*this, TxKind::kRead, [&](SqlTx& tx, int64_t& n) -> Status {
      ASSIGN_OR_RETURN(const SqlRows& q, tx.Query(count_sql, args));
      n = q.Int(0, 0);
      return Status::Ok();
    });
  }
  int64_t total = 0;
  PurgePace pace(r.batch);
  for (;;) {
    PurgeBatch done;
    const int64_t batch = pace.batch();
    const auto started = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(Transact(TxKind::kWrite, [&](SqlTx& tx) -> Status {
      ASSIGN_OR_RETURN(done, delete_batch(tx, batch));
      return Status::Ok();
    }));
    total += done.deleted;
    if (done.taken < batch) return total;
    std::this_thread::sleep_for(pace.After(std::chrono::steady_clock::now() - started));
  }
}

}  // namespace hookbox
