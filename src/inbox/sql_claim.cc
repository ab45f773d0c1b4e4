// Claim and finish, once for both dialects (see sql_inbox.h): the due jobs that head their
// resource under handler state (paused, circuit, rate), their leases, a sync request's
// claim of one event, the finish's compare-and-swap on the lease token with the sql
// handler's savepoint, and the row's status settled from its jobs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <tuple>

#include "base/status_macros.h"
#include "base/trace.h"
#include "inbox/handler_gate.h"
#include "inbox/sql_inbox.h"
#include "ops/storage_health.h"

namespace hookbox {
namespace {

// The columns a claim reads: the job, and the stored event its handler gets.
std::string ClaimColumns(const SqlSpelling& d) {
  return "j.id, j.inbox_id, j.handler, j.attempts, i.endpoint, i.event_id, i.event_type,"
         " i.resource_id, i.sequence, i.body, i.headers, " +
         d.Time("i.received_at") +
         ", (SELECT count(*) FROM attempts a WHERE a.job = j.id), j.generation";
}

ClaimedJob ReadClaim(const SqlRows& q, size_t row) {
  ClaimedJob c;
  c.job_id = q.Int(row, 0);
  c.inbox_id = q.Int(row, 1);
  c.handler = q.Text(row, 2);
  c.budget_used = static_cast<int>(q.Int(row, 3)) + 1;
  c.event.endpoint = q.Text(row, 4);
  c.event.event_id = q.Text(row, 5);
  c.event.event_type = q.Text(row, 6);
  c.event.resource_id = q.Text(row, 7);
  c.event.sequence = q.Text(row, 8);
  c.event.body = q.Text(row, 9);
  c.event.headers_json = q.Text(row, 10);
  c.event.received_at = q.Text(row, 11);
  c.event.attempt = static_cast<int>(q.Int(row, 12)) + 1;
  c.event.generation = static_cast<int>(q.Int(row, 13));
  const std::optional<std::string> producer = TraceparentOfStoredHeaders(c.event.headers_json);
  c.event.traceparent =
      Traceparent(EventTrace(c.event.endpoint, c.event.event_id, producer), NewSpanId());
  c.lease_token = NewLeaseToken();
  return c;
}

Circuit CircuitFromName(const std::string& name) {
  for (Circuit c : {Circuit::kOpen, Circuit::kHalfOpen}) {
    if (name == CircuitName(c)) return c;
  }
  return Circuit::kClosed;
}

// A job heads its resource: no earlier unfinished job of the resource, by (inbox id, job
// id), and no live lease on another of its jobs. The arguments are SQL expressions. The
// resource is never empty here; saying so lets SQLite use inbox_by_resource, which holds
// only rows with a resource (its migration 0012).
std::string HeadsItsResource(const std::string& endpoint, const std::string& resource,
                             const std::string& row, const std::string& job,
                             const std::string& now) {
  return "NOT EXISTS (SELECT 1 FROM inbox i2 JOIN jobs j2 ON j2.inbox_id = i2.id"
         " WHERE i2.endpoint = " +
         endpoint + " AND i2.resource_id = " + resource +
         " AND i2.resource_id <> '' AND j2.id <> " + job +
         " AND j2.status IN ('pending', 'processing') AND ((i2.id, j2.id) < (" + row + ", " + job +
         ") OR (j2.status = 'processing' AND j2.lease_until >= " + now + ")))";
}

// The finishes in the lock order, (inbox_id, job_id).
std::vector<size_t> FinishOrder(const std::vector<FinishRequest>& finishes) {
  std::vector<size_t> order(finishes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(finishes[a].job->inbox_id, finishes[a].job->job_id) <
           std::tie(finishes[b].job->inbox_id, finishes[b].job->job_id);
  });
  return order;
}

}  // namespace

std::string JsonText(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<std::vector<ClaimedJob>> SqlInbox::ClaimJobs(const std::string& owner, int max,
                                                      TimePoint now,
                                                      std::chrono::milliseconds lease,
                                                      const ClaimLimits& limits) {
  return ReadInto<std::vector<ClaimedJob>>(
      *this, TxKind::kClaim, [&](SqlTx& tx, std::vector<ClaimedJob>& claimed) {
        return ClaimInto(tx, owner, max, now, lease, limits, &claimed);
      });
}

// The claim's body. With no handler held (a paused or non-closed state row) and no rate, one
// plain due query. Otherwise the held and rated handlers are left out of it, and each of
// them that may run now is claimed apart under its state row (PostgreSQL: locked FOR UPDATE,
// in one order, which is what makes two replicas share one token bucket and one probe;
// SQLite: the writer's transaction), at most its budget.
//
// Lanes (ClaimLimits::slots): a handler takes at most its free slots. A handler with none is
// left out of the plain query; one that fills up during it is left out too and the query
// runs again for the room left, so the due jobs behind one handler's backlog are found in
// this claim, not after that backlog. That is at most one more query per handler that
// fills, and none while no lane fills.
Status SqlInbox::ClaimInto(SqlTx& tx, const std::string& owner, int max, TimePoint now,
                           std::chrono::milliseconds lease, const ClaimLimits& limits,
                           std::vector<ClaimedJob>* out) {
  ClaimRun run{tx, owner, max, now, FormatTime(now), lease, out, {}};
  ASSIGN_OR_RETURN(
      const SqlRows& held,
      tx.Query("SELECT endpoint, handler FROM handler_state WHERE paused OR circuit <> 'closed'"));
  std::map<HandlerKey, const HandlerRate*> rates;
  for (const HandlerRate& r : limits.rates) rates[{r.endpoint, r.handler}] = &r;
  std::map<HandlerKey, int> room_of;  // each lane's room left in this claim
  for (const HandlerSlots& s : limits.slots) room_of[{s.endpoint, s.handler}] = std::max(0, s.free);
  std::set<HandlerKey> apart_set;
  for (size_t i = 0; i < held.size(); ++i) apart_set.emplace(held.Text(i, 0), held.Text(i, 1));
  for (const auto& [key, rate] : rates) apart_set.insert(key);
  RETURN_IF_ERROR(ClaimLanes(run, apart_set, room_of));

  for (const HandlerKey& key : apart_set) {
    if (out->size() >= static_cast<size_t>(max)) break;
    auto r = rates.find(key);
    const HandlerRate* rate = r == rates.end() ? nullptr : r->second;
    auto lane = room_of.find(key);
    HandlerState st;
    // A held handler (no rate) whose row is gone was resumed or forgotten since the list
    // above was read (PostgreSQL reads each statement's own snapshot): it is held no more,
    // and the next claim's plain query takes its jobs. Creating a row for it here would
    // bring back a state `handler forget` just removed (hookbox_handler_paused and `handler
    // list` would show it again).
    bool found = true;
    RETURN_IF_ERROR(LoadState(tx, key.first, key.second, &st, rate ? nullptr : &found));
    if (!found) continue;
    const GateDecision decision = DecideClaim(st, rate, now);
    int take = max - static_cast<int>(out->size());
    if (!decision.unlimited) take = std::min(decision.budget, take);
    if (lane != room_of.end()) take = std::min(lane->second, take);
    if (take <= 0) continue;
    std::vector<ClaimedJob> mine, heads;
    RETURN_IF_ERROR(DueJobs(tx, run.now_text, take, {key}, true, &mine));
    RETURN_IF_ERROR(KeepHeads(tx, run.now_text, mine, &heads));
    if (heads.empty()) continue;
    auto t = AfterClaim(st, rate, decision, static_cast<int>(heads.size()), now, lease);
    RETURN_IF_ERROR(StoreState(tx, st));
    for (ClaimedJob& job : heads) {
      if (!rate) job.rate_due_at.reset();
      job.probe = t.has_value();
    }
    RETURN_IF_ERROR(Take(run, heads));
  }
  return MarkProcessing(tx, run.rows);
}

// The plain due query over every handler but those `left_out` (held apart, or lanes with no
// room), again without each lane that fills up, while there is room (ClaimInto's "Lanes").
Status SqlInbox::ClaimLanes(ClaimRun& run, std::set<HandlerKey> left_out,
                            std::map<HandlerKey, int>& room_of) {
  for (const auto& [key, room] : room_of) {
    if (room == 0) left_out.insert(key);
  }
  const size_t max = static_cast<size_t>(run.max);
  for (;;) {
    const size_t want = max - std::min(run.out->size(), max);
    if (want == 0) return Status::Ok();
    std::vector<ClaimedJob> due, fits, kept;
    RETURN_IF_ERROR(DueJobs(run.tx, run.now_text, static_cast<int>(want),
                            {left_out.begin(), left_out.end()}, false, &due));
    bool filled = false;  // a lane ran out of room: look again without it
    for (ClaimedJob& job : due) {
      auto lane = room_of.find({job.event.endpoint, job.handler});
      if (lane != room_of.end()) {
        if (lane->second == 0) continue;
        if (--lane->second == 0) filled = left_out.insert(lane->first).second;
      }
      job.rate_due_at.reset();  // no rate holds these
      fits.push_back(std::move(job));
    }
    RETURN_IF_ERROR(KeepHeads(run.tx, run.now_text, fits, &kept));
    RETURN_IF_ERROR(Take(run, kept));
    if (due.size() < want || !filled) return Status::Ok();
  }
}

// Leases what a step of the claim found and adds it to the claim, so that the next step's
// due query sees those jobs taken (and the later jobs of their resources not heading them).
Status SqlInbox::Take(ClaimRun& run, std::vector<ClaimedJob>& jobs) {
  RETURN_IF_ERROR(LeaseJobs(run.tx, jobs, run.owner, run.now, run.lease, &run.rows));
  for (ClaimedJob& job : jobs) run.out->push_back(std::move(job));
  return Status::Ok();
}

Status SqlInbox::LockKey(SqlTx& tx, KeyLock which, const std::string& key) {
  if (*d_.lock_key == '\0') return Status::Ok();
  return tx.Run(d_.lock_key, {key, static_cast<int>(which)});
}

// With row locks (PostgreSQL) a claim's snapshot may be behind another replica's commit (a
// claim, or `inbox retry` re-arming an earlier job): each job with a resource is kept only
// if, under the resource's claim lock taken without waiting (another claim of it deciding:
// not kept) and with a fresh snapshot, it still heads it. SQLite's one writer has no such
// race.
Status SqlInbox::KeepHeads(SqlTx& tx, const std::string& now, std::vector<ClaimedJob>& due,
                           std::vector<ClaimedJob>* out) {
  static const std::string kHeads =
      "SELECT " + HeadsItsResource("$1", "$2", "$4::bigint", "$3::bigint", "$5::timestamptz");
  for (ClaimedJob& job : due) {
    if (d_.row_locks && !job.event.resource_id.empty()) {
      ASSIGN_OR_RETURN(
          const SqlRows& locked,
          tx.Query(d_.try_lock_key, {ResourceKey(job.event.endpoint, job.event.resource_id),
                                     static_cast<int>(KeyLock::kClaim)}));
      if (!locked.Bool(0, 0)) continue;
      ASSIGN_OR_RETURN(const SqlRows& heads,
                       tx.Query(kHeads, {job.event.endpoint, job.event.resource_id, job.job_id,
                                         job.inbox_id, now}));
      if (!heads.Bool(0, 0)) continue;
    }
    out->push_back(std::move(job));
  }
  return Status::Ok();
}

// Due jobs that head their resource's queue (as this snapshot sees it): no earlier
// unfinished job of the same (endpoint, resource), and no live lease on any of its jobs;
// PostgreSQL locks them, skipping those another replica is locking. Sync jobs are the
// producer's to retry. A job is due in one of two ways (pending and its time has come, or
// processing and its lease ran out): one query each, walking jobs_due in order and
// stopping after `max`, merged in that order. (One query with an OR gathered and sorted
// every due job at each claim: a backlog made each claim slower the longer it grew.)
//
// `apart`: with `only` false, these (endpoint, handler) pairs' jobs are left out (none: the
// plain query); with `only` true, the one pair's jobs alone are taken. Each job's
// next_attempt_at is kept in rate_due_at (the caller drops it where no rate applies).
Status SqlInbox::DueJobs(SqlTx& tx, const std::string& now, int max,
                         const std::vector<HandlerKey>& apart, bool only,
                         std::vector<ClaimedJob>* out) {
  SqlArgs args = {now, int64_t{max}};
  std::string pairs;  // "($3, $4), ($5, $6)": the pairs' parameters
  for (const HandlerKey& key : apart) {
    pairs += (pairs.empty() ? "($" : ", ($") + std::to_string(args.size() + 1) + ", $" +
             std::to_string(args.size() + 2) + ")";
    args.emplace_back(key.first);
    args.emplace_back(key.second);
  }
  std::string which;
  if (only) {
    which = " AND i.endpoint = $3 AND j.handler = $4";
  } else if (!apart.empty()) {
    which = " AND (i.endpoint, j.handler) NOT IN (VALUES " + pairs + ")";
  }
  const std::string select = "SELECT " + ClaimColumns(d_) + ", " + d_.Time("j.next_attempt_at") +
                             " FROM jobs j " + d_.jobs_inbox +
                             " inbox i ON i.id = j.inbox_id WHERE ";
  const std::string heads_its_resource =
      which + " AND " + d_.not_sync + " AND (i.resource_id = '' OR " +
      HeadsItsResource("i.endpoint", "i.resource_id", "i.id", "j.id", "$1::timestamptz") +
      ") ORDER BY " + d_.due_order + " LIMIT $2" + d_.skip_locked;
  std::vector<std::pair<std::string, ClaimedJob>> due;  // (next_attempt_at, job)
  for (const char* way : {"j.status = 'pending' AND j.next_attempt_at <= $1::timestamptz",
                          "j.status = 'processing' AND j.lease_until < $1::timestamptz"}) {
    ASSIGN_OR_RETURN(const SqlRows& q, tx.Query(select + way + heads_its_resource, args));
    for (size_t i = 0; i < q.size(); ++i) due.emplace_back(q.Text(i, 14), ReadClaim(q, i));
  }
  std::sort(due.begin(), due.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.job_id) < std::tie(b.first, b.second.job_id);
  });
  if (due.size() > static_cast<size_t>(max)) due.resize(static_cast<size_t>(max));
  for (auto& [at, job] : due) {
    job.rate_due_at = StateTime(at);
    out->push_back(std::move(job));
  }
  return Status::Ok();
}

// Gives each selected (on PostgreSQL, row-locked) job to `owner`: a new lease token,
// lease_until, attempts + 1, an open attempts row; an attempt abandoned by a dead worker is
// marked so. Their inbox rows go into `rows`, for MarkProcessing once the claim has all
// its jobs.
Status SqlInbox::LeaseJobs(SqlTx& tx, std::vector<ClaimedJob>& jobs, const std::string& owner,
                           TimePoint now, std::chrono::milliseconds lease,
                           std::set<int64_t>* rows) {
  const std::string now_text = FormatTime(now);
  const std::string until = FormatTime(now + lease);
  for (ClaimedJob& j : jobs) {
    RETURN_IF_ERROR(
        tx.Run("UPDATE attempts SET detail = 'abandoned: the lease ran out (worker stopped"
               " or died)' WHERE job = $1 AND finished_at IS NULL",
               {j.job_id}));
    RETURN_IF_ERROR(
        tx.Run("UPDATE jobs SET status = 'processing', attempts = attempts + 1,"
               " lease_owner = $1, lease_token = $2, lease_until = $3 WHERE id = $4",
               {owner, j.lease_token, until, j.job_id}));
    ASSIGN_OR_RETURN(const std::optional<int64_t> attempt,
                     tx.InsertRow("INSERT INTO attempts (job, number, started_at, generation)"
                                  " VALUES ($1, $2, $3, $4)",
                                  {j.job_id, j.event.attempt, now_text, j.event.generation}));
    j.attempt_id = attempt.value_or(0);
    rows->insert(j.inbox_id);
  }
  return Status::Ok();
}

// The claimed jobs' rows become processing, last and in ascending id order, so two claims
// of jobs of the same rows never wait for each other in a cycle.
Status SqlInbox::MarkProcessing(SqlTx& tx, const std::set<int64_t>& rows) {
  for (int64_t row : rows) {
    RETURN_IF_ERROR(tx.Run(
        "UPDATE inbox SET status = 'processing' WHERE id = $1 AND status = 'pending'", {row}));
  }
  return Status::Ok();
}

// ---- Handler state (DESIGN.md, "Handler state"; rules in handler_gate.h) ----

std::string SqlInbox::StateColumns() const {
  return "endpoint, handler, paused, paused_reason, coalesce(" + d_.Time("paused_at") +
         ", ''), circuit, failures, coalesce(" + d_.Time("open_until") + ", ''), coalesce(" +
         d_.Time("probe_until") + ", ''), coalesce(CAST(tokens AS TEXT), ''), coalesce(" +
         d_.Time("refilled_at") + ", '')";
}

HandlerState ReadState(const SqlRows& q, size_t i) {
  HandlerState st;
  st.endpoint = q.Text(i, 0);
  st.handler = q.Text(i, 1);
  st.paused = q.Bool(i, 2);
  st.paused_reason = q.Text(i, 3);
  st.paused_at = q.Text(i, 4);
  st.circuit = CircuitFromName(q.Text(i, 5));
  st.failures = q.Int(i, 6);
  st.open_until = q.Text(i, 7);
  st.probe_until = q.Text(i, 8);
  if (const std::string& t = q.Text(i, 9); !t.empty()) st.tokens = std::strtod(t.c_str(), nullptr);
  st.refilled_at = q.Text(i, 10);
  return st;
}

// The state row of one handler; a default one (running, closed, full) when it has none. On
// PostgreSQL it is locked FOR UPDATE until the transaction ends, created first when missing
// so that there is a row to lock.
Status SqlInbox::LoadState(SqlTx& tx, const std::string& endpoint, const std::string& handler,
                           HandlerState* out, bool* found) {
  if (found) *found = true;
  for (int round = 0; round < 2; ++round) {
    ASSIGN_OR_RETURN(const SqlRows& q,
                     tx.Query("SELECT " + StateColumns() +
                                  " FROM handler_state WHERE endpoint = $1 AND handler = $2" +
                                  d_.Lock(" FOR UPDATE"),
                              {endpoint, handler}));
    if (!q.empty()) {
      *out = ReadState(q, 0);
      return Status::Ok();
    }
    if (found) {
      *found = false;
      return Status::Ok();
    }
    if (!d_.row_locks) {
      *out = HandlerState{};
      out->endpoint = endpoint;
      out->handler = handler;
      return Status::Ok();
    }
    RETURN_IF_ERROR(tx.Run(
        "INSERT INTO handler_state (endpoint, handler) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        {endpoint, handler}));
  }
  return Status::Internal("handler_state row vanished", endpoint + "/" + handler);
}

// Writes the whole row (insert or replace).
Status SqlInbox::StoreState(SqlTx& tx, const HandlerState& st) {
  char tokens[64] = "";
  if (st.tokens) std::snprintf(tokens, sizeof tokens, "%.17g", *st.tokens);
  return tx.Run(
      std::string("INSERT INTO handler_state (endpoint, handler, paused, paused_reason,"
                  " paused_at, circuit, failures, open_until, probe_until, tokens, refilled_at)"
                  " VALUES ($1, $2, $3, $4, nullif($5, '')::timestamptz, $6, $7,"
                  " nullif($8, '')::timestamptz, nullif($9, '')::timestamptz,"
                  " CAST(nullif($10, '') AS ") +
          d_.real +
          "), nullif($11, '')::timestamptz)"
          " ON CONFLICT (endpoint, handler) DO UPDATE SET paused = excluded.paused,"
          " paused_reason = excluded.paused_reason, paused_at = excluded.paused_at,"
          " circuit = excluded.circuit, failures = excluded.failures,"
          " open_until = excluded.open_until, probe_until = excluded.probe_until,"
          " tokens = excluded.tokens, refilled_at = excluded.refilled_at",
      {st.endpoint, st.handler, st.paused, st.paused_reason, st.paused_at, CircuitName(st.circuit),
       st.failures, st.open_until, st.probe_until, std::string_view(tokens), st.refilled_at});
}

StatusOr<int64_t> SqlInbox::SetPaused(const std::vector<HandlerRef>& handlers, bool paused,
                                      const std::string& reason, TimePoint now) {
  return ReadInto<int64_t>(*this, TxKind::kWrite, [&](SqlTx& tx, int64_t& changed) -> Status {
    for (const HandlerRef& ref : handlers) {
      HandlerState st;
      RETURN_IF_ERROR(LoadState(tx, ref.endpoint, ref.handler, &st));
      if (!ApplyPause(st, paused, reason, now)) continue;
      RETURN_IF_ERROR(StoreState(tx, st));
      ++changed;
    }
    return Status::Ok();
  });
}

StatusOr<std::optional<CircuitTransition>> SqlInbox::RecordCircuit(const HandlerRef& handler,
                                                                   Outcome outcome,
                                                                   const CircuitLimit& limit,
                                                                   TimePoint now) {
  using Transition = std::optional<CircuitTransition>;
  return ReadInto<Transition>(*this, TxKind::kWrite, [&](SqlTx& tx, Transition& t) -> Status {
    HandlerState st;
    RETURN_IF_ERROR(LoadState(tx, handler.endpoint, handler.handler, &st));
    const HandlerState before = st;
    t = ApplyOutcome(st, outcome, limit, now);
    if (!t && st.failures == before.failures && st.probe_until == before.probe_until) {
      return Status::Ok();  // nothing to write (the common ok of a closed circuit)
    }
    return StoreState(tx, st);
  });
}

// ---- A sync request's claim of one event ----

// On PostgreSQL the event's unfinished jobs rows are locked first, so that two requests
// taking over at once serialize: the second sees the first's leases. NOWAIT: rows locked by
// another request (the hold of the one running them, HoldJobs) make the event busy at once
// (Conflict, so the transaction rolls back); the caller waits for that lock within its own
// sync_wait (AwaitEvent), not here within the pool's lock_timeout.
Status SqlInbox::EventBusy(SqlTx& tx, int64_t inbox_id, const std::string& now, bool* busy) {
  auto leased = tx.Query(
      std::string("SELECT status = 'processing' AND lease_until >= $2::timestamptz FROM jobs"
                  " WHERE inbox_id = $1 AND status IN ('pending', 'processing') ORDER BY id") +
          d_.Lock(" FOR UPDATE NOWAIT"),
      {inbox_id, now});
  if (!leased.ok() && IsStorageBusy(leased.status()) && !tx.Lost()) {
    *busy = true;
    return Status::Conflict(Status::ConflictKind::kEventBusy, "event busy",
                            "its jobs are locked by the request running them");
  }
  RETURN_IF_ERROR(leased.status());
  for (size_t i = 0; i < leased->size(); ++i) *busy = *busy || leased->Bool(i, 0);
  return Status::Ok();
}

// The event's unfinished jobs for a sync request: all of them, unless one is leased to
// someone else (EventBusy).
Status SqlInbox::ClaimEventInto(SqlTx& tx, int64_t inbox_id, const std::string& owner,
                                TimePoint now, std::chrono::milliseconds lease, EventClaim* out) {
  bool busy = false;
  Status s = EventBusy(tx, inbox_id, FormatTime(now), &busy);
  if (busy) out->state = EventClaim::State::kBusy;
  if (!s.ok() || busy) return s;
  ASSIGN_OR_RETURN(
      const SqlRows& q,
      tx.Query("SELECT " + ClaimColumns(d_) +
                   " FROM jobs j JOIN inbox i ON i.id = j.inbox_id WHERE j.inbox_id = $1"
                   " AND j.status IN ('pending', 'processing') ORDER BY j.id",
               {inbox_id}));
  for (size_t i = 0; i < q.size(); ++i) out->jobs.push_back(ReadClaim(q, i));
  out->state = out->jobs.empty() ? EventClaim::State::kSettled : EventClaim::State::kClaimed;
  std::set<int64_t> rows;
  RETURN_IF_ERROR(LeaseJobs(tx, out->jobs, owner, now, lease, &rows));
  return MarkProcessing(tx, rows);
}

StatusOr<EventClaim> SqlInbox::ClaimEvent(const std::string& endpoint, const std::string& event_id,
                                          const std::string& owner, TimePoint now,
                                          std::chrono::milliseconds lease) {
  EventClaim claim;
  Status s = Transact(TxKind::kWrite, [&](SqlTx& tx) -> Status {
    claim = EventClaim{};
    ASSIGN_OR_RETURN(const SqlRows& row, FindEvent(tx, "id, status", endpoint, event_id));
    claim.row_status = row.Text(0, 1);
    return ClaimEventInto(tx, row.Int(0, 0), owner, now, lease, &claim);
  });
  if (!s.ok() && claim.state != EventClaim::State::kBusy) return s;
  return claim;
}

// ---- Finish ----

StatusOr<Outcome> SqlInbox::FinishJob(const ClaimedJob& job, const JobOutcome& outcome,
                                      const TransactionalWork* work,
                                      const JobOutcome* work_failed) {
  const FinishRequest f{&job, outcome, work, work_failed ? *work_failed : outcome};
  return ReadInto<Outcome>(*this, TxKind::kWrite, [&](SqlTx& tx, Outcome& recorded) {
    return FinishInto(tx, f, &recorded);
  });
}

// A batch's finishes in one transaction. When none runs work of its own (the common case) and
// there are several, all at once, in a few statements whatever their number (FinishMany).
// Otherwise, or when the database refuses that (a trigger, text it cannot store) on a live
// connection, finish by finish in (inbox_id, job_id) order, each in a savepoint of its own
// (FinishAlone), so that only a bad one fails. When the connection broke or the COMMIT went
// unanswered (it may have committed), the whole batch fails. Either way each locks its jobs, then
// its inbox rows in id order, so two replicas' batches cannot deadlock.
std::vector<StatusOr<Outcome>> SqlInbox::FinishJobs(const std::vector<FinishRequest>& finishes) {
  std::vector<StatusOr<Outcome>> results(finishes.size(), Status::Internal("not finished"));
  bool alone = finishes.size() < 2 ||
               std::any_of(finishes.begin(), finishes.end(), [](const FinishRequest& f) {
                 return f.work && f.outcome.outcome == Outcome::kOk;
               });
  Status s = alone ? Status::Ok() : Transact(TxKind::kWrite, [&](SqlTx& tx) {
    Status many = FinishMany(tx, finishes, &results);
    alone = !many.ok() && !tx.Lost();
    return many;
  });
  if (alone) {
    s = Transact(TxKind::kWrite, [&](SqlTx& tx) -> Status {
      for (size_t i : FinishOrder(finishes)) {
        RETURN_IF_ERROR(FinishAlone(tx, finishes[i], &results[i]));
      }
      return Status::Ok();
    });
  }
  if (!s.ok()) std::fill(results.begin(), results.end(), StatusOr<Outcome>(s));
  return results;
}

// Finishes whose work (if any) has run, all at once: the jobs whose lease token
// still matches move on (the compare-and-swap), then their attempts are recorded and their
// rows settled (SettleRows), one statement each for the whole batch, its finishes passed as
// one JSON array. A finish whose lease was lost gets Conflict and changes nothing.
Status SqlInbox::FinishMany(SqlTx& tx, const std::vector<FinishRequest>& finishes,
                            std::vector<StatusOr<Outcome>>* results) {
  using nlohmann::json;
  std::vector<json> each;
  for (const FinishRequest& f : finishes) {
    const JobOutcome& o = f.outcome;
    each.push_back(
        {f.job->job_id, f.job->lease_token, JobStatusFor(o.next),
         o.next == JobOutcome::Next::kRetry ? json(FormatTime(o.next_attempt_at)) : json(),
         FormatTime(o.finished_at), OutcomeName(o.outcome), StorableText(o.detail),
         f.job->attempt_id, o.refund_try ? 1 : 0});
  }
  const std::string f =
      std::string(
          "(SELECT (value->>0)::bigint AS job, value->>1 AS token, value->>2 AS status,"
          " (value->>3)::timestamptz AS next_at, (value->>4)::timestamptz AS finished,"
          " value->>5 AS outcome, value->>6 AS detail, (value->>7)::bigint AS attempt,"
          " (value->>8)::integer AS refund FROM ") +
      d_.json_rows + ") AS f";
  ASSIGN_OR_RETURN(
      const SqlRows& moved,
      tx.Query(std::string("UPDATE jobs SET status = f.status,"
                           " next_attempt_at = coalesce(f.next_at, jobs.next_attempt_at),"
                           " last_error = CASE WHEN f.outcome = 'ok' THEN NULL ELSE f.detail END,"
                           " attempts = ") +
                   d_.greatest +
                   "(jobs.attempts - f.refund, 0), lease_owner = NULL, lease_token = NULL,"
                   " lease_until = NULL FROM " +
                   f + " WHERE jobs.id = f.job AND jobs.lease_token = f.token AND " + d_.no_index +
                   "jobs.status = 'processing' RETURNING jobs.id",
               {JsonText(json(each))}));
  std::set<int64_t> done;
  for (size_t i = 0; i < moved.size(); ++i) done.insert(moved.Int(i, 0));
  json recorded = json::array();
  std::map<int64_t, std::string> rows;  // inbox id -> the latest finish of its jobs
  for (size_t i = 0; i < finishes.size(); ++i) {
    const ClaimedJob& job = *finishes[i].job;
    if (done.count(job.job_id) == 0) {
      (*results)[i] = LeaseLost(job);
      continue;
    }
    (*results)[i] = finishes[i].outcome.outcome;
    recorded.push_back(each[i]);
    std::string& at = rows[job.inbox_id];
    at = std::max(at, FormatTime(finishes[i].outcome.finished_at));  // text order is time order
  }
  if (rows.empty()) return Status::Ok();
  RETURN_IF_ERROR(
      tx.Run("UPDATE attempts SET finished_at = f.finished, outcome = f.outcome,"
             " detail = f.detail FROM " +
                 f + " WHERE attempts.id = f.attempt",
             {JsonText(recorded)}));
  return SettleRows(tx, rows);
}

// One finish in a savepoint of its own: *result is its outcome, or its failure when only it
// failed (nothing of it stays); the return is a failure of the whole transaction.
Status SqlInbox::FinishAlone(SqlTx& tx, const FinishRequest& f, StatusOr<Outcome>* result) {
  RETURN_IF_ERROR(tx.Run("SAVEPOINT finish"));
  Outcome recorded = f.outcome.outcome;
  Status s = FinishInto(tx, f, &recorded);
  if (!s.ok() && tx.Lost()) return s;  // nothing to record on a transaction that is gone
  if (!s.ok()) RETURN_IF_ERROR(tx.Run("ROLLBACK TO SAVEPOINT finish"));
  *result = s.ok() ? StatusOr<Outcome>(recorded) : StatusOr<Outcome>(s);
  return tx.Run("RELEASE SAVEPOINT finish");
}

// One finish: its handler's work (RunWork), then the job moved on by the compare-and-swap
// on its lease token, its attempt recorded and its row settled. Each statement names its row
// by key, so PostgreSQL looks it up by index whatever it knows of the tables; a batch's join
// (FinishMany) is planned from the tables' statistics, and before a fresh inbox's first
// ANALYZE its cached plans scan them, which a batch amortizes and a lone finish would not.
Status SqlInbox::FinishInto(SqlTx& tx, const FinishRequest& f, Outcome* recorded) {
  JobOutcome o = f.outcome;
  if (f.work && o.outcome == Outcome::kOk) RETURN_IF_ERROR(RunWork(tx, f, &o));
  const bool retry = o.next == JobOutcome::Next::kRetry;
  ASSIGN_OR_RETURN(
      const SqlRows& cas,
      tx.Query(std::string("UPDATE jobs SET status = $1,"
                           " next_attempt_at = coalesce($2::timestamptz, next_attempt_at),"
                           " last_error = $3, attempts = ") +
                   d_.greatest +
                   "(attempts - $6, 0), lease_owner = NULL, lease_token = NULL, lease_until = NULL"
                   " WHERE id = $4 AND lease_token = $5 AND status = 'processing'",
               {JobStatusFor(o.next), retry ? SqlArg(FormatTime(o.next_attempt_at)) : SqlArg(),
                o.outcome != Outcome::kOk ? SqlArg(StorableText(o.detail)) : SqlArg(),
                f.job->job_id, f.job->lease_token, int64_t{o.refund_try ? 1 : 0}}));
  if (cas.changed == 0) return LeaseLost(*f.job);
  const std::string finished = FormatTime(o.finished_at);
  RETURN_IF_ERROR(
      tx.Run("UPDATE attempts SET finished_at = $1, outcome = $2, detail = $3 WHERE id = $4",
             {finished, OutcomeName(o.outcome), StorableText(o.detail), f.job->attempt_id}));
  *recorded = o.outcome;
  return SettleRows(tx, {{f.job->inbox_id, finished}});
}

// The handler's TransactionalWork, only once the lease is known to be held (nothing of a
// worker that lost its lease runs), in a savepoint of its own: when it fails, nothing of it
// stays and *outcome becomes what is recorded instead (work_failed, with the error).
Status SqlInbox::RunWork(SqlTx& tx, const FinishRequest& f, JobOutcome* outcome) {
  ASSIGN_OR_RETURN(const SqlRows& held,
                   tx.Query(std::string("SELECT 1 FROM jobs WHERE id = $1 AND lease_token = $2"
                                        " AND status = 'processing'") +
                                d_.Lock(" FOR NO KEY UPDATE"),
                            {f.job->job_id, f.job->lease_token}));
  if (held.empty()) return LeaseLost(*f.job);
  RETURN_IF_ERROR(tx.Run("SAVEPOINT handler_work"));
  if (Status s = f.work->Run(tx, f.job->event); !s.ok()) {
    if (tx.Lost()) return s;
    RETURN_IF_ERROR(tx.Run("ROLLBACK TO SAVEPOINT handler_work"));
    *outcome = WorkFailedOutcome(f.outcome, &f.work_failed, f.work->kind(), s);
  }
  return tx.Run("RELEASE SAVEPOINT handler_work");
}

namespace {

// The SET clause that derives an inbox row's status from its jobs: dead if any job is dead,
// processed (processed_at = `at`) when all are done, processing otherwise. `row` is the
// row's id as the statement names it.
std::string SettledStatus(const std::string& row, const std::string& at) {
  // Counts, not EXISTS: a scalar subquery runs per row by the jobs' index, where PostgreSQL may
  // answer an EXISTS over many rows by hashing every unfinished job of the table.
  const std::string jobs = "(SELECT count(*) FROM jobs WHERE inbox_id = " + row + " AND status ";
  const std::string dead = jobs + "= 'dead') > 0", unfinished = jobs + "<> 'done') > 0";
  return "status = CASE WHEN " + dead + " THEN 'dead' WHEN " + unfinished +
         " THEN 'processing' ELSE 'processed' END, processed_at = CASE WHEN " + unfinished +
         " THEN NULL ELSE " + at + " END";
}

}  // namespace

// Sets each inbox row's status from its jobs (SettledStatus), with its time. On PostgreSQL the
// rows are locked first, in ascending id order and in a statement of their own, so that the
// jobs are read as of after any concurrent settle of them committed.
Status SqlInbox::SettleRows(SqlTx& tx, const std::map<int64_t, std::string>& rows) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& [id, at] : rows) pairs.push_back({id, at});
  const std::string r = std::string("(SELECT (value->>0)::bigint AS id,") +
                        " (value->>1)::timestamptz AS at FROM " + d_.json_rows + ") AS r";
  if (d_.row_locks) {
    RETURN_IF_ERROR(
        tx.Run("SELECT id FROM inbox WHERE id IN (SELECT id FROM " + r + ") ORDER BY id FOR UPDATE",
               {JsonText(pairs)}));
  }
  return tx.Run("UPDATE inbox SET " + SettledStatus("inbox.id", "r.at") + " FROM " + r +
                    " WHERE inbox.id = r.id",
                {JsonText(pairs)});
}

}  // namespace hookbox
