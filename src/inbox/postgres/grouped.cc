// PostgreSQL's grouped statements (see grouped.h): the parameters of a group as arrays (or
// numbered rows), one statement each.
#include "inbox/postgres/grouped.h"

#include "base/status_macros.h"
#include "inbox/backend.h"
#include "inbox/sql_inbox.h"

namespace hookbox::pg {

std::string TextArray(const std::vector<std::optional<std::string>>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    if (!items[i]) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char c : *items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

std::string TextArray(const std::vector<std::string>& items) {
  return TextArray(std::vector<std::optional<std::string>>(items.begin(), items.end()));
}

StatusOr<std::set<std::pair<std::string, std::string>>> InsertEvents(
    Conn& c, const std::vector<const Event*>& events) {
  // Each event is 13 parameters: its row's 12, then its handlers as an array.
  Params params;
  std::string rows, input;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = *events[i];
    params.Add(e.endpoint).Add(e.event_id).Add(e.id_source).Add(e.event_type).Add(e.resource_id);
    params.Add(e.sequence).Add(e.sequence_key).Add(e.body_sha256).Add(e.headers_json);
    params.AddBytes(e.body).Add(e.handlers.empty() ? "ignored" : "pending");
    params.Add(FormatTime(e.received_at)).Add(TextArray(e.handlers));
    const size_t k = i * 13;
    auto at = [&](int n) { return "$" + std::to_string(k + n); };
    rows += std::string(i ? "," : "") + "(";
    for (int n = 1; n <= 12; ++n) rows += (n > 1 ? ", " : "") + at(n);
    rows += ")";
    input += std::string(i ? "," : "") + "(" + at(1) + "::text, " + at(2) + "::text, " + at(12) +
             "::timestamptz, " + at(13) + "::text[])";
  }
  ASSIGN_OR_RETURN(
      Result ins,
      c.Exec(std::string("WITH row AS (INSERT INTO inbox (") + kAcceptColumns + ") VALUES " + rows +
                 " ON CONFLICT (endpoint, event_id) DO NOTHING"
                 " RETURNING id, endpoint, event_id),"
                 " input (endpoint, event_id, received_at, handlers) AS (VALUES " +
                 input +
                 "),"
                 " jobs AS (INSERT INTO jobs (inbox_id, handler, status,"
                 " next_attempt_at, sync) SELECT row.id, t.h, 'pending',"
                 " input.received_at, false FROM row JOIN input"
                 " USING (endpoint, event_id),"
                 " unnest(input.handlers) WITH ORDINALITY AS t (h, n)"
                 " ORDER BY row.id, t.n)"
                 " SELECT endpoint, event_id FROM row",
             params));
  std::set<std::pair<std::string, std::string>> stored;
  for (int i = 0; i < ins.rows(); ++i) stored.emplace(ins.Text(i, 0), ins.Text(i, 1));
  return stored;
}

StatusOr<std::set<int64_t>> MoveFinishedJobs(Conn& c, const std::vector<FinishRequest>& finishes) {
  // The arrays the statement unnests: one element per finish, in each column.
  std::vector<std::optional<std::string>> job, token, status, next_at, last_error, finished,
      outcome, detail, number, refund;
  for (const FinishRequest& f : finishes) {
    const JobOutcome& o = f.outcome;
    job.emplace_back(std::to_string(f.job->job_id));
    token.emplace_back(f.job->lease_token);
    status.emplace_back(JobStatusFor(o.next));
    next_at.push_back(o.next == JobOutcome::Next::kRetry
                          ? std::optional<std::string>(FormatTime(o.next_attempt_at))
                          : std::nullopt);
    // StorableText: PostgreSQL text must be UTF-8 without NUL, and SQLite stores the same.
    last_error.push_back(o.outcome != Outcome::kOk
                             ? std::optional<std::string>(StorableText(o.detail))
                             : std::nullopt);
    finished.emplace_back(FormatTime(o.finished_at));
    outcome.emplace_back(OutcomeName(o.outcome));
    detail.emplace_back(StorableText(o.detail));
    number.emplace_back(std::to_string(f.job->event.attempt));
    refund.emplace_back(o.refund_try ? "1" : "0");
  }
  Params arrays;
  for (const auto* column : {&job, &token, &status, &next_at, &last_error, &finished, &outcome,
                             &detail, &number, &refund}) {
    arrays.Add(TextArray(*column));
  }
  ASSIGN_OR_RETURN(
      Result moved,
      c.Exec("WITH f AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[],"
             " $4::timestamptz[], $5::text[], $6::timestamptz[], $7::text[], $8::text[],"
             " $9::integer[], $10::integer[]) AS f (job, token, status, next_at,"
             " last_error, finished, outcome, detail, number, refund)),"
             " cas AS (UPDATE jobs j SET status = f.status,"
             " next_attempt_at = coalesce(f.next_at, j.next_attempt_at),"
             " last_error = f.last_error, attempts = greatest(j.attempts - f.refund, 0),"
             " lease_owner = NULL, lease_token = NULL, lease_until = NULL FROM f"
             " WHERE j.id = f.job AND j.lease_token = f.token AND j.status = 'processing'"
             " RETURNING j.id, j.inbox_id),"
             " attempt AS (UPDATE attempts a SET finished_at = f.finished,"
             " outcome = f.outcome, detail = f.detail FROM f JOIN cas ON cas.id = f.job"
             " WHERE a.job = f.job AND a.number = f.number)"
             " SELECT id FROM cas",
             arrays));
  std::set<int64_t> done;
  for (int r = 0; r < moved.rows(); ++r) done.insert(moved.Int(r, 0));
  return done;
}

Status SettleRows(Conn& c, const std::map<int64_t, std::string>& rows) {
  std::vector<std::string> ids, ats;
  for (const auto& [id, at] : rows) {
    ids.push_back(std::to_string(id));
    ats.push_back(at);
  }
  RETURN_IF_ERROR(Exec(c, "SELECT 1 FROM inbox WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE",
                       Params().Add(TextArray(ids))));
  return Exec(c,
              "UPDATE inbox i SET " + SettledStatus("i.id", "r.at") +
                  " FROM unnest($1::bigint[], $2::timestamptz[]) AS r (id, at) WHERE i.id = r.id",
              Params().Add(TextArray(ids)).Add(TextArray(ats)));
}

}  // namespace hookbox::pg
