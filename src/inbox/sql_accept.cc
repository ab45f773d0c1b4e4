// The accept transaction, once for both dialects (see sql_inbox.h): the resource's lock,
// dedupe by body, the row (or a duplicate's count), the sequence gate, the jobs, and on a
// sync endpoint its sql handlers' work and the claim of the rest for the request.
#include <cstdlib>

#include "base/status_macros.h"
#include "base/trace.h"
#include "inbox/sql_inbox.h"

namespace hookbox {

int64_t SqlRows::Int(size_t row, int col) const {
  return std::strtoll(rows[row][col].c_str(), nullptr, 10);
}

bool SqlRows::Bool(size_t row, int col) const {
  const std::string& v = rows[row][col];
  return v == "t" || v == "1";
}

StatusOr<AcceptResult> SqlInbox::Accept(const Event& event) {
  return ReadInto<AcceptResult>(*this, TxKind::kWrite, [&](SqlTx& tx, AcceptResult& result) {
    return AcceptInto(tx, event, &result);
  });
}

// The accept transaction's body. On PostgreSQL the resource's accept lock comes first, so
// that inbox ids of one resource ascend in commit order, the order its jobs run in.
Status SqlInbox::AcceptInto(SqlTx& tx, const Event& e, AcceptResult* out) {
  const std::string now = FormatTime(e.received_at);
  if (!e.resource_id.empty()) {
    RETURN_IF_ERROR(LockKey(tx, KeyLock::kAccept, ResourceKey(e.endpoint, e.resource_id)));
  }
  if (e.dedupe_body) {
    ASSIGN_OR_RETURN(const bool duplicate, BodyDuplicate(tx, e, now, out));
    if (duplicate) return Status::Ok();
  }
  static const std::string kInsert = std::string(kInsertEvent) +
                                     " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,"
                                     " $12) ON CONFLICT (endpoint, event_id) DO NOTHING";
  ASSIGN_OR_RETURN(const std::optional<int64_t> inserted,
                   tx.InsertRow(kInsert, {e.endpoint, e.event_id, e.id_source, e.event_type,
                                          e.resource_id, e.sequence, e.sequence_key, e.body_sha256,
                                          e.headers_json, SqlArg::Bytes(e.body),
                                          e.handlers.empty() ? "ignored" : "pending", now}));
  if (!inserted) return CountDuplicate(tx, e, now, out);
  const int64_t inbox_id = *inserted;
  if (!e.resource_id.empty() && e.sequence_key.has_value()) {
    // Sequence gate: lower than the last accepted sequence of the resource is stale; equal
    // is not (second-resolution timestamps tie, and a redelivery after `inbox clear` must
    // run). The upsert locks the sequences row whether or not it moves it.
    ASSIGN_OR_RETURN(
        const SqlRows& gate,
        tx.Query(
            "INSERT INTO sequences (endpoint, resource_id, last_sequence, last_event_id, "
            "updated_at)"
            " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (endpoint, resource_id) DO UPDATE"
            " SET last_sequence = excluded.last_sequence, last_event_id = excluded.last_event_id,"
            " updated_at = excluded.updated_at"
            " WHERE sequences.last_sequence <= excluded.last_sequence",
            {e.endpoint, e.resource_id, *e.sequence_key, e.event_id, now}));
    if (gate.changed == 0) {  // neither inserted nor moved forward
      out->verdict = Verdict::kStale;
      return tx.Run("UPDATE inbox SET status = 'stale' WHERE id = $1", {inbox_id});
    }
  }
  if (e.handlers.empty()) {
    out->verdict = Verdict::kIgnored;
    return Status::Ok();
  }
  return AddJobs(tx, e, inbox_id, now, out);
}

// A duplicate (on PostgreSQL a concurrent first delivery has committed by now: the insert
// waited for it): counted on the original row, unless strict_body refuses another body. The
// gate is not consulted or advanced. A statement of its own, so that it sees the row the
// insert ran into even when that row committed after the insert's snapshot.
Status SqlInbox::CountDuplicate(SqlTx& tx, const Event& e, const std::string& now,
                                AcceptResult* out) {
  out->verdict = Verdict::kDuplicate;
  ASSIGN_OR_RETURN(
      const SqlRows& up,
      tx.Query("UPDATE inbox SET duplicates = duplicates + 1, last_duplicate_at = $3"
               " WHERE endpoint = $1 AND event_id = $2 AND (NOT $4::boolean OR body_sha256 = $5)"
               " RETURNING body_sha256 <> $5",
               {e.endpoint, e.event_id, now, e.strict_body, e.body_sha256}));
  if (!up.empty()) {
    out->body_changed = up.Bool(0, 0);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(const SqlRows& q,
                   tx.Query("SELECT 1 FROM inbox WHERE endpoint = $1 AND event_id = $2",
                            {e.endpoint, e.event_id}));
  if (q.empty()) {
    return Status::Unavailable("storage unavailable",
                               "the event was cleared while this delivery was accepted");
  }
  out->body_changed = true;
  return Status::Conflict(Status::ConflictKind::kBodyDiffers,
                          "event id already stored with another body", e.event_id);
}

// dedupe: [id, body]. Under the body's lock (PostgreSQL: a concurrent accept of the same
// body, under another id or on another replica, waits here until this one has committed its
// row, then finds it; SQLite: the one writer runs accepts one after another): the first
// stored row of the endpoint with this body, unless a row with this event's id exists (that
// one is a duplicate by id, counted by the insert's path). Found: counted there, and true.
StatusOr<bool> SqlInbox::BodyDuplicate(SqlTx& tx, const Event& e, const std::string& now,
                                       AcceptResult* out) {
  RETURN_IF_ERROR(LockKey(tx, KeyLock::kBody, ResourceKey(e.endpoint, e.body_sha256)));
  ASSIGN_OR_RETURN(
      const SqlRows& up,
      tx.Query("UPDATE inbox SET duplicates = duplicates + 1, last_duplicate_at = $4"
               " WHERE id = (SELECT id FROM inbox WHERE endpoint = $1 AND body_sha256 = $2"
               " AND NOT EXISTS (SELECT 1 FROM inbox WHERE endpoint = $1 AND event_id = $3)"
               " ORDER BY id LIMIT 1) RETURNING event_id",
               {e.endpoint, e.body_sha256, e.event_id, now}));
  if (up.empty()) return false;
  out->verdict = Verdict::kDuplicate;
  out->duplicate_of = up.Text(0, 0);
  return true;
}

Status SqlInbox::InsertJobs(SqlTx& tx, const Event& e, int64_t inbox_id, const std::string& now) {
  static const std::string kInsert =
      std::string(kInsertJobs) + " VALUES ($1, $2, 'pending', $3, $4)";
  for (const std::string& handler : e.handlers) {
    RETURN_IF_ERROR(tx.Run(kInsert, {inbox_id, handler, now, !e.sync_owner.empty()}));
  }
  return Status::Ok();
}

// The accepted row's jobs; on a sync endpoint, the work its handlers run in the transaction
// and the claim of the rest for the request.
Status SqlInbox::AddJobs(SqlTx& tx, const Event& e, int64_t inbox_id, const std::string& now,
                         AcceptResult* out) {
  RETURN_IF_ERROR(InsertJobs(tx, e, inbox_id, now));
  out->verdict = Verdict::kAccepted;
  if (e.sync_owner.empty()) return Status::Ok();
  if (!e.sync_work.empty()) RETURN_IF_ERROR(RunSyncWork(tx, e, inbox_id, now));
  EventClaim claim;
  RETURN_IF_ERROR(ClaimEventInto(tx, inbox_id, e.sync_owner, e.received_at, e.sync_lease, &claim));
  out->claimed = std::move(claim.jobs);
  return Status::Ok();
}

// mode: sync, handlers with a TransactionalWork: it runs in the accept transaction, and
// their jobs are recorded done with one ok attempt. A failing work fails the whole accept,
// Internal "<kind> handler failed" (Unavailable stays Unavailable).
Status SqlInbox::RunSyncWork(SqlTx& tx, const Event& e, int64_t inbox_id, const std::string& now) {
  HandlerEvent he;
  he.endpoint = e.endpoint;
  he.event_id = e.event_id;
  he.event_type = e.event_type;
  he.resource_id = e.resource_id;
  he.sequence = e.sequence;
  he.body = e.body;
  he.received_at = now;
  const std::optional<std::string> producer = TraceparentOfStoredHeaders(e.headers_json);
  he.traceparent = Traceparent(EventTrace(e.endpoint, e.event_id, producer), NewSpanId());
  for (const auto& [handler, work] : e.sync_work) {
    const std::string kind(work->kind());
    if (Status s = work->Run(tx, he); !s.ok()) {
      if (s.code() == Status::Code::kUnavailable) return s;
      return Status::Internal(kind + " handler failed", s.ToString());
    }
    ASSIGN_OR_RETURN(
        const SqlRows& done,
        tx.Query(
            "UPDATE jobs SET status = 'done', attempts = 1 WHERE inbox_id = $1 AND handler = $2"
            " RETURNING id",
            {inbox_id, handler}));
    if (done.empty()) continue;
    RETURN_IF_ERROR(
        tx.Run("INSERT INTO attempts (job, number, started_at, finished_at, outcome, detail)"
               " VALUES ($1, 1, $2, $2, 'ok', $3)",
               {done.Int(0, 0), now, kind + ": ran in the accept transaction"}));
  }
  return SettleRows(tx, {{inbox_id, now}});
}

}  // namespace hookbox
