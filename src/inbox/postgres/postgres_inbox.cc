// The PostgreSQL inbox (see postgres_inbox.h): the inbox's algorithm (SqlInbox, sql_*.cc)
// on a connection pool, with this file's locks (the hooks LockKey, KeepHeads, EventBusy,
// and the spelling's row locks), when the grouped statements of simple accepts and plain
// finishes apply (grouped.{h,cc}), sync requests' job holds, and the `sql` handlers'
// statements.
// The schema and its migrations: schema.{h,cc}.
//
// Locks, in the one order every transaction takes them (so replicas never deadlock on each
// other): a resource's advisory lock, then jobs rows, then inbox rows in ascending id order.
// (A claim takes the advisory lock after its jobs rows, but only with a try-lock: it never
// waits for it.)
// - accept: the resource's accept lock (so inbox ids of one resource ascend in commit order,
//   which is the order its jobs run in), with dedupe: [id, body] the body's lock (each
//   transaction takes at most one resource lock and then at most one body lock, so the two
//   never wait on each other in a cycle), the unique index on (endpoint, event_id) (a
//   concurrent delivery of the same event waits for the first to commit or roll back), the
//   sequences row (upsert with a conditional update: the gate only moves forward).
// - claim: FOR UPDATE SKIP LOCKED on due jobs, then for a job with a resource a try-lock on
//   the resource's claim lock and a re-check, under it, that the job still heads its
//   resource with no live lease on another of its jobs (a fresh snapshot: a claim another
//   replica committed a moment ago is seen).
// - sync hold: FOR KEY SHARE on the jobs a sync request runs, in a transaction of its own
//   for the whole run. It conflicts only with FOR UPDATE (a duplicate's takeover claim and
//   its AwaitEvent, which so wait for the run to end) and deletes, not with the finish's
//   updates (FOR NO KEY UPDATE), which run on another connection of the same request.
// - finish: the job row (lease compare-and-swap), then the inbox row before its status is
//   derived from its jobs (a fresh snapshot: two jobs of one row finishing at once settle it
//   right).
#include "inbox/postgres/postgres_inbox.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "base/status_macros.h"
#include "inbox/group_commit.h"
#include "inbox/postgres/grouped.h"
#include "inbox/postgres/named_params.h"
#include "inbox/postgres/pg.h"
#include "inbox/postgres/schema.h"
#include "inbox/sql_inbox.h"

namespace hookbox {
namespace {

using pg::CheckSchema;
using pg::Conn;
using pg::kMigrationLock;
using pg::Migrate;
using pg::Params;
using pg::Result;
using pg::SchemaChoice;
using pg::SettleRows;
using pg::TextArray;
namespace sqlstate = pg::sqlstate;

// Connections per process: enough for the HTTP threads' accepts and the workers at once;
// more would only queue inside the server on a small machine.
constexpr int kPoolSize = 10;
// Connections for sync requests' job holds and duplicates' lock waits (HoldJobs,
// AwaitEvent), apart from the pool above so that requests waiting on a lock never starve
// accepts or finishes. Opened on first use (only sync endpoints use them); when all are busy
// a request falls back to the lease poll.
constexpr int kHoldPoolSize = 16;
// Advisory lock keys (kMigrationLock: schema.h). Resources: a hash of "endpoint \x1f
// resource" seeded per purpose, so accepts never wait for claims.
constexpr int kAcceptSeed = 1;
constexpr int kClaimSeed = 2;
// dedupe: [id, body]: a hash of "endpoint \x1f body_sha256", so that accepts of one body
// (under any ids, on any replica) look for a stored copy one at a time.
constexpr int kBodySeed = 3;

// A `sql` handler statement in positional form, and how its parameters are typed.
struct UserStatement {
  std::string sql;
  std::vector<std::string> names;
  bool text_params = false;  // the server could not infer a type: all parameters are text
};

Params EventParams(const UserStatement& st, const HandlerEvent& e) {
  Params p;
  for (const std::string& name : st.names) {
    if (auto v = SqlParameter(e, name)) {
      if (v->text) {
        p.Add(*v->text);
      } else {
        p.Add(v->number);  // as text: the server reads it as the type the statement wants
      }
    } else {
      p.AddNull();  // the sql handler refuses unknown names at load
    }
  }
  return p;
}

class PostgresInbox final : public SqlInbox {
 public:
  PostgresInbox(std::string url, std::vector<std::string> setup)
      : SqlInbox(kPostgresSpelling),
        pool_(url, setup, kPoolSize),
        holds_(std::move(url), std::move(setup), kHoldPoolSize) {}

  // A simple accept waiting for its group (see Accept): on its caller's stack.
  struct PendingAccept {
    explicit PendingAccept(const Event* e) : event(e) {}
    const Event* event;
    StatusOr<AcceptResult> result = Status::Internal("not accepted");
  };
  // 64 rows of 13 parameters: a statement well under the protocol's 65,535 parameters.
  static constexpr size_t kMaxAcceptGroup = 64;

  StatusOr<AcceptResult> Accept(const Event& event) override {
    if (event.resource_id.empty() && event.sync_owner.empty() && !event.dedupe_body) {
      // No gate, no sync claim: group-committed with the simple accepts of other requests
      // (group_commit.h), their rows and jobs in one statement, one round trip, one commit.
      PendingAccept mine{&event};
      accepts_.Submit(mine, kMaxAcceptGroup,
                      [this](const std::vector<PendingAccept*>& group) { AcceptGroup(group); });
      return std::move(mine.result);
    }
    return SqlInbox::Accept(event);
  }

  // A claim lost in a server crash only makes its job run again (at least once, as after
  // any crash): its commit need not wait for the WAL flush. (The token bucket's update
  // commits with it: a lost one gives back tokens for jobs that run again anyway.)
  Status Transact(TxKind kind, const TxFn& fn) override {
    auto run = [&](Conn& c) {
      PgTx tx(c, *this);
      return fn(tx);
    };
    switch (kind) {
      case TxKind::kWrite:
        return TransactOn(run);
      case TxKind::kClaim:
        return TransactOn(run, "BEGIN; SET LOCAL synchronous_commit TO off");
      case TxKind::kRead:
        return Read(run);
      case TxKind::kSnapshot:
        return TransactOn(run, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    }
    return Status::Internal("unknown transaction kind");
  }
  // One transaction for the batch. The finishes lock their jobs and then their inbox rows,
  // rows in id order, so two replicas' batches cannot deadlock. A batch in which no finish
  // runs sql statements (the common case) is three statements whatever its size
  // (FinishMany); one with sql, or whose FinishMany the server refuses as a whole (text it
  // cannot store), goes finish by finish in (inbox_id, job_id) order, a savepoint each, so
  // that only the bad one fails.
  std::vector<StatusOr<Outcome>> FinishJobs(const std::vector<FinishRequest>& finishes) override {
    const std::vector<size_t> order = FinishOrder(finishes);
    const bool plain = std::none_of(finishes.begin(), finishes.end(), [](const FinishRequest& f) {
      return f.sql && f.outcome.outcome == Outcome::kOk;
    });
    std::vector<StatusOr<Outcome>> results(finishes.size(), Status::Internal("not finished"));
    Status s = TransactOn(
        [&](Conn& c) -> Status {
          if (plain && finishes.size() > 1) {
            Status many = FinishMany(c, finishes, &results);
            if (many.ok() || c.broken()) return many;
            RETURN_IF_ERROR(c.Run("ROLLBACK TO SAVEPOINT many"));
          }
          PgTx tx(c, *this);
          for (size_t i : order) {
            RETURN_IF_ERROR(FinishAlone(tx, finishes[i], &results[i]));
          }
          return Status::Ok();
        },
        "BEGIN; SAVEPOINT many");
    if (!s.ok()) std::fill(results.begin(), results.end(), StatusOr<Outcome>(s));
    return results;
  }
  std::unique_ptr<JobsHold> HoldJobs(const std::vector<ClaimedJob>& jobs) override {
    if (jobs.empty()) return nullptr;
    auto handle = holds_.TryAcquire();
    if (!handle.ok()) return nullptr;
    std::string ids = "{";
    for (const ClaimedJob& job : jobs) {
      if (ids.size() > 1) ids += ',';
      ids += std::to_string(job.job_id);
    }
    ids += '}';
    Conn& c = **handle;
    if (!c.Run("BEGIN").ok() ||
        !c.Exec("SELECT 1 FROM jobs WHERE id = ANY($1::bigint[]) FOR KEY SHARE", Params().Add(ids))
             .ok()) {
      return nullptr;  // the handle rolls back whatever began
    }
    struct Hold final : JobsHold {
      explicit Hold(pg::Pool::Handle h) : handle(std::move(h)) {}
      pg::Pool::Handle handle;  // its release rolls the transaction back: the lock goes
    };
    return std::make_unique<Hold>(std::move(*handle));
  }

  bool AwaitEvent(const std::string& endpoint, const std::string& event_id,
                  std::chrono::milliseconds wait) override {
    auto handle = holds_.TryAcquire();
    if (!handle.ok()) return false;
    Conn& c = **handle;
    const std::string lock_jobs =
        "SELECT 1 FROM jobs WHERE inbox_id = (SELECT id FROM inbox WHERE endpoint = $1"
        " AND event_id = $2) AND status IN ('pending', 'processing') FOR UPDATE";
    const Params p = Params().Add(endpoint).Add(event_id);
    if (!c.Run("BEGIN").ok()) return false;
    // First without waiting: no lock held means nothing to wait for (the lease poll goes on).
    if (c.Exec(lock_jobs + " NOWAIT", p).ok() || c.last_sqlstate() != sqlstate::kLockNotAvailable) {
      return false;
    }
    const auto ms = std::max<int64_t>(1, wait.count());
    if (!c.Run("ROLLBACK; BEGIN; SET LOCAL lock_timeout = " + std::to_string(ms)).ok()) {
      return false;
    }
    (void)c.Exec(lock_jobs, p);  // returns when the holder ends, or after `wait`
    return true;                 // the handle rolls back: nothing of this wait stays locked
  }

  Status PrepareSql(const SqlWork& sql) override {
    // Setup under the migration lock: replicas starting at once must not race on
    // CREATE TABLE IF NOT EXISTS (it is not safe against itself in PostgreSQL).
    RETURN_IF_ERROR(TransactOn([&](Conn& c) -> Status {
      RETURN_IF_ERROR(
          Exec(c, "SELECT pg_advisory_xact_lock($1::bigint)", Params().Add(kMigrationLock)));
      for (const std::string& statement : sql.setup) RETURN_IF_ERROR(c.Run(statement));
      return Status::Ok();
    }));
    // Outside a transaction: a failed prepare aborts nothing.
    return Read([&](Conn& c) -> Status {
      for (const std::string& statement : sql.statements) {
        UserStatement st = Translate(statement);
        Status p = c.Prepare(st.sql, false, static_cast<int>(st.names.size()));
        if (!p.ok() && c.last_sqlstate() == sqlstate::kIndeterminateDatatype) {
          // e.g. `SELECT :event_id`: with every parameter text, the server can decide.
          p = c.Prepare(st.sql, true, static_cast<int>(st.names.size()));
          if (p.ok()) MarkTextParams(statement);
        }
        if (!p.ok()) return p;
      }
      return Status::Ok();
    });
  }

  Status Ping() override {
    return Read([](Conn& c) { return Exec(c, "SELECT 1"); });
  }

 private:
  // One transaction of the algorithm (sql_inbox.h) on a pooled connection.
  class PgTx final : public SqlTx {
   public:
    PgTx(Conn& c, PostgresInbox& inbox) : conn_(c), inbox_(inbox) {}
    StatusOr<SqlRows> Query(const std::string& sql, const SqlArgs& args) override {
      Params p;
      for (const SqlArg& a : args) {
        switch (a.kind()) {
          case SqlArg::Kind::kNull:
            p.AddNull();
            break;
          case SqlArg::Kind::kText:
            p.Add(a.text());
            break;
          case SqlArg::Kind::kBytes:
            p.AddBytes(a.text());
            break;
          case SqlArg::Kind::kInt:
            p.Add(a.number());
            break;
          case SqlArg::Kind::kBool:
            p.Add(a.number() != 0);
            break;
        }
      }
      ASSIGN_OR_RETURN(pg::Result r, conn_.Exec(sql, p));
      SqlRows out;
      out.changed = r.Affected();
      out.rows.resize(static_cast<size_t>(r.rows()));
      for (int i = 0; i < r.rows(); ++i) {
        for (int k = 0; k < r.cols(); ++k) {
          out.rows[i].push_back(r.IsBytes(k) ? r.Bytes(i, k) : r.Text(i, k));
        }
      }
      return out;
    }
    StatusOr<std::optional<int64_t>> InsertRow(const std::string& sql,
                                               const SqlArgs& args) override {
      ASSIGN_OR_RETURN(const SqlRows& r, Query(sql + " RETURNING id", args));
      if (r.empty()) return std::optional<int64_t>();
      return std::optional<int64_t>(r.Int(0, 0));
    }
    bool Lost() override { return conn_.broken(); }
    Status RunUserSql(const std::string& statement, const HandlerEvent& e) override {
      return inbox_.RunUserStatement(conn_, statement, e);
    }
    Conn& conn() { return conn_; }

   private:
    Conn& conn_;
    PostgresInbox& inbox_;
  };

  // Advisory locks on a hash of the key, seeded per purpose, so accepts never wait for
  // claims.
  Status LockKey(SqlTx& tx, KeyLock which, const std::string& key) override {
    const int seed = which == KeyLock::kAccept  ? kAcceptSeed
                     : which == KeyLock::kClaim ? kClaimSeed
                                                : kBodySeed;
    return tx.Run("SELECT pg_advisory_xact_lock(hashtextextended($1::text, $2::bigint))",
                  {key, seed});
  }

  // The jobs rows are locked first, so two requests taking over at once serialize: the
  // second sees the first's leases. NOWAIT: rows locked by another request (the hold of
  // the one running them, see HoldJobs) make the event busy at once (Conflict, so the
  // transaction rolls back); the caller waits for that lock within its own sync_wait
  // (AwaitEvent), not here within the pool's lock_timeout.
  Status EventBusy(SqlTx& tx, int64_t inbox_id, const std::string& now, bool* busy) override {
    auto locked = tx.Query(
        "SELECT status = 'processing' AND lease_until >= $2::timestamptz FROM jobs"
        " WHERE inbox_id = $1 AND status IN ('pending', 'processing') ORDER BY id"
        " FOR UPDATE NOWAIT",
        {inbox_id, now});
    if (!locked.ok()) {
      if (static_cast<PgTx&>(tx).conn().last_sqlstate() != sqlstate::kLockNotAvailable)
        return locked.status();
      *busy = true;
      return Status::Conflict(Status::ConflictKind::kEventBusy, "event busy",
                              "its jobs are locked by the request running them");
    }
    for (size_t i = 0; i < locked->size(); ++i) *busy = *busy || locked->Bool(i, 0);
    return Status::Ok();
  }

  Status InsertJobs(SqlTx& tx, const Event& e, int64_t inbox_id, const std::string& now) override {
    return tx.Run(
        "INSERT INTO jobs (inbox_id, handler, status, next_attempt_at, sync)"
        " SELECT $1, h, 'pending', $3, $4 FROM unnest($2::text[]) WITH ORDINALITY AS t (h, n)"
        " ORDER BY n",
        {inbox_id, TextArray(e.handlers), now, !e.sync_owner.empty()});
  }

  // A claim's snapshot may be behind another replica's commit: each job with a resource is
  // kept only if it still heads it (StillHeadsResource).
  Status KeepHeads(SqlTx& tx, const std::string& now, std::vector<ClaimedJob>& due,
                   std::vector<ClaimedJob>* out) override {
    for (ClaimedJob& job : due) {
      if (!job.event.resource_id.empty()) {
        bool heads = false;
        RETURN_IF_ERROR(StillHeadsResource(static_cast<PgTx&>(tx).conn(), job, now, &heads));
        if (!heads) continue;
      }
      out->push_back(std::move(job));
    }
    return Status::Ok();
  }
  // Runs fn in one transaction on a pooled connection and commits when it returns Ok. A
  // connection found dead at BEGIN (the server restarted since it was last used) is replaced
  // once: nothing ran on it yet. A COMMIT whose answer is lost is Unavailable: the
  // transaction may or may not have committed, and the caller must not claim it did.
  template <typename F>
  Status TransactOn(F&& fn, const char* begin = "BEGIN") {
    for (int attempt = 0;; ++attempt) {
      ASSIGN_OR_RETURN(pg::Pool::Handle handle, pool_.Acquire());
      Conn& c = *handle;
      if (Status s = c.Run(begin); !s.ok()) {
        if (c.broken() && attempt == 0) continue;
        return s;
      }
      Status s = fn(c);
      if (s.ok() && c.failed_transaction()) {
        s = Status::Internal("storage error", "a statement failed inside the transaction");
      }
      if (!s.ok()) {
        if (!c.broken()) (void)c.Run("ROLLBACK");
        return s;
      }
      return c.Run("COMMIT");
    }
  }

  // Runs fn on a pooled connection without BEGIN: each statement its own transaction.
  template <typename F>
  Status Autocommit(F&& fn) {
    ASSIGN_OR_RETURN(pg::Pool::Handle handle, pool_.Acquire());
    return fn(*handle);
  }

  // Runs fn (reads only) on a pooled connection, once more on a fresh connection if the
  // first one turns out to be dead.
  template <typename F>
  Status Read(F&& fn) {
    for (int attempt = 0;; ++attempt) {
      ASSIGN_OR_RETURN(pg::Pool::Handle handle, pool_.Acquire());
      Status s = fn(*handle);
      if (!s.ok() && handle->broken() && attempt == 0) continue;
      return s;
    }
  }

  UserStatement Translate(const std::string& statement) {
    std::lock_guard lock(user_mu_);
    auto it = user_sql_.find(statement);
    if (it == user_sql_.end()) {
      pg::PositionalSql p = pg::ToPositional(statement);
      it = user_sql_.emplace(statement, UserStatement{std::move(p.sql), std::move(p.names)}).first;
    }
    return it->second;
  }

  void MarkTextParams(const std::string& statement) {
    std::lock_guard lock(user_mu_);
    user_sql_[statement].text_params = true;
  }

  // Runs one `sql` handler statement with the event's parameters.
  Status RunUserStatement(Conn& c, const std::string& statement, const HandlerEvent& e) {
    UserStatement st = Translate(statement);
    auto r = c.Exec(st.sql, EventParams(st, e), st.text_params);
    return r.ok() ? Status::Ok() : r.status();
  }

  // The accepts of a group (see Accept): the first delivery of each (endpoint, event_id) in
  // the group goes into one statement (InsertEvents), its own transaction, so the group costs
  // one round trip and one commit. The deliveries it did not insert are duplicates, counted
  // one by one. Not ok only when that statement failed, which then stored nothing.
  Status AcceptMany(Conn& c, const std::vector<PendingAccept*>& group) {
    std::vector<const Event*> firsts;
    std::set<std::pair<std::string, std::string>> keys;
    for (PendingAccept* p : group) {
      if (keys.emplace(p->event->endpoint, p->event->event_id).second) firsts.push_back(p->event);
    }
    ASSIGN_OR_RETURN(auto stored, pg::InsertEvents(c, firsts));
    for (PendingAccept* p : group) {
      const Event& e = *p->event;
      AcceptResult r{};
      if (stored.erase({e.endpoint, e.event_id}) > 0) {
        r.verdict = e.handlers.empty() ? Verdict::kIgnored : Verdict::kAccepted;
        p->result = r;
        continue;
      }
      PgTx tx(c, *this);
      Status dup = CountDuplicate(tx, e, FormatTime(e.received_at), &r);
      p->result = dup.ok() ? StatusOr<AcceptResult>(r) : StatusOr<AcceptResult>(dup);
    }
    return Status::Ok();
  }

  // Runs a group of simple accepts (the leader's work, see Accept). When the group's
  // statement fails as a whole without a doubt that nothing was stored (one event the server
  // cannot store, such as text that is not UTF-8), each delivery is tried alone, so that
  // only the bad one fails (in the accept transaction of every event, AcceptInto); a lost
  // connection (Unavailable: it may have committed) fails them all, and the producers' retries find
  // what was stored.
  void AcceptGroup(const std::vector<PendingAccept*>& group) {
    Status s = Autocommit([&](Conn& c) { return AcceptMany(c, group); });
    if (s.ok()) return;
    for (PendingAccept* p : group) {
      if (s.code() == Status::Code::kUnavailable || group.size() == 1) {
        p->result = s;
        continue;
      }
      p->result = SqlInbox::Accept(*p->event);
    }
  }

  // Under the resource's claim lock, with a fresh snapshot: does the job still head its
  // resource, with no live lease on another job of it? (Another replica may have committed a
  // claim, or `inbox retry` re-armed an earlier job, since the claim's snapshot.) *heads is
  // false too while another claim of this resource is deciding.
  Status StillHeadsResource(Conn& c, const ClaimedJob& job, const std::string& now_text,
                            bool* heads) {
    ASSIGN_OR_RETURN(
        pg::Result lock,
        c.Exec(
            "SELECT pg_try_advisory_xact_lock(hashtextextended($1::text,"
            " $2::bigint))",
            Params().Add(ResourceKey(job.event.endpoint, job.event.resource_id)).Add(kClaimSeed)));
    if (!lock.Bool(0, 0)) return Status::Ok();
    ASSIGN_OR_RETURN(pg::Result head,
                     c.Exec("SELECT NOT EXISTS ("
                            " SELECT 1 FROM inbox i2 JOIN jobs j2 ON j2.inbox_id = i2.id"
                            " WHERE i2.endpoint = $1 AND i2.resource_id = $2"
                            " AND j2.id <> $3 AND j2.status IN ('pending', 'processing')"
                            " AND ((i2.id, j2.id) < ($4::bigint, $3::bigint)"
                            "      OR (j2.status = 'processing'"
                            "          AND j2.lease_until >= $5::timestamptz)))",
                            Params()
                                .Add(job.event.endpoint)
                                .Add(job.event.resource_id)
                                .Add(job.job_id)
                                .Add(job.inbox_id)
                                .Add(now_text)));
    *heads = head.Bool(0, 0);
    return Status::Ok();
  }

  // Finishes without sql statements, all at once: one statement moves every job whose lease
  // token still matches (MoveFinishedJobs), then their rows are settled (SettleRows). A job
  // whose lease was lost gets Conflict and changes nothing.
  Status FinishMany(Conn& c, const std::vector<FinishRequest>& finishes,
                    std::vector<StatusOr<Outcome>>* results) {
    ASSIGN_OR_RETURN(const std::set<int64_t> done, pg::MoveFinishedJobs(c, finishes));
    std::map<int64_t, std::string> rows;  // inbox id -> the latest finish of its jobs
    for (size_t i = 0; i < finishes.size(); ++i) {
      const ClaimedJob& job = *finishes[i].job;
      if (done.count(job.job_id) == 0) {
        (*results)[i] = LeaseLost(job);
        continue;
      }
      (*results)[i] = finishes[i].outcome.outcome;
      std::string& at = rows[job.inbox_id];
      // One format throughout: text order is time order.
      at = std::max(at, FormatTime(finishes[i].outcome.finished_at));
    }
    return rows.empty() ? Status::Ok() : SettleRows(c, rows);
  }

  pg::Pool pool_;
  pg::Pool holds_;
  GroupCommit<PendingAccept> accepts_;
  std::mutex user_mu_;                             // guards user_sql_
  std::map<std::string, UserStatement> user_sql_;  // the sql handlers' statements, translated
};

}  // namespace

StatusOr<std::unique_ptr<Inbox>> OpenPostgresInbox(const InboxOptions& options,
                                                   std::vector<std::string>* applied) {
  // lock_timeout plays SQLite's busy_timeout: a write that waits longer for a lock fails
  // (Unavailable, 503) instead of holding the request. durability: normal lets a commit
  // return before its WAL is flushed (the last commits may be lost if the server crashes).
  std::vector<std::string> setup = {"SET lock_timeout = '5s'"};
  if (!options.durable) setup.emplace_back("SET synchronous_commit = off");
  // One connection resolves the schema (and migrates), before the pool exists: every pooled
  // connection then starts pinned to it.
  ASSIGN_OR_RETURN(const std::unique_ptr<Conn> conn, Conn::Connect(options.database, setup));
  SchemaChoice choice;
  Status s;
  if (options.create) {
    if (s = conn->Run("BEGIN"); s.ok()) s = Migrate(*conn, &choice, applied);
    // A COMMIT whose answer is lost may or may not have committed: Unavailable either way.
    s = s.ok() ? conn->Run("COMMIT") : s;
  } else {
    s = CheckSchema(*conn, &choice);
  }
  if (!s.ok()) {
    if (applied) applied->clear();  // rolled back with the connection
    if (s.code() == Status::Code::kUnavailable) return s;
    return Status::Unavailable(options.create ? "cannot migrate database" : "cannot open database",
                               s.ToString());
  }
  setup.push_back("SET search_path TO " + choice.search_path);
  return std::unique_ptr<Inbox>(
      std::make_unique<PostgresInbox>(options.database, std::move(setup)));
}

}  // namespace hookbox
