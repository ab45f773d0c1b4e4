// The PostgreSQL inbox (see postgres_inbox.h): the inbox's algorithm (SqlInbox, sql_*.cc)
// on a connection pool, with PostgreSQL's spelling (row locks, advisory locks), the grouped
// statement of simple accepts (grouped.{h,cc}), sync requests' job holds, and the `sql`
// handlers' statements. The schema and its migrations:
// schema.{h,cc}.
//
// Every transaction takes its locks in one order, so replicas never deadlock on each other:
// a resource's advisory lock, then jobs rows, then inbox rows in ascending id order (a
// claim takes its advisory lock after its jobs rows, but only with a try-lock: it never
// waits for it). docs/DESIGN.md, "PostgreSQL locks", says which step takes which.
#include "inbox/postgres/postgres_inbox.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/status_macros.h"
#include "inbox/group_commit.h"
#include "inbox/postgres/grouped.h"
#include "inbox/postgres/named_params.h"
#include "inbox/postgres/pg.h"
#include "inbox/postgres/schema.h"
#include "inbox/sql_inbox.h"
#include "ops/storage_health.h"

namespace hookbox {
namespace {

using pg::CheckSchema;
using pg::Conn;
using pg::kMigrationLock;
using pg::Migrate;
using pg::Params;
using pg::Result;
using pg::SchemaChoice;
namespace sqlstate = pg::sqlstate;

// Connections per process: enough for the HTTP threads' accepts and the workers at once;
// more would only queue inside the server on a small machine.
constexpr int kPoolSize = 10;
// Connections for sync requests' job holds and duplicates' lock waits (HoldJobs,
// AwaitEvent), apart from the pool above so that requests waiting on a lock never starve
// accepts or finishes. Opened on first use (only sync endpoints use them); when all are busy
// a request falls back to the lease poll.
constexpr int kHoldPoolSize = 16;
// A handler's statement (TransactionalWork) in positional form, and how its parameters are
// typed.
struct UserStatement {
  std::string sql;
  std::vector<std::string> names;
  bool text_params = false;  // the server could not infer a type: all parameters are text
};

Params NamedParams(const UserStatement& st, const StatementParams& params) {
  Params p;
  for (const std::string& name : st.names) {
    const std::optional<StatementValue> v = params(name);
    if (!v) {
      p.AddNull();  // a name the work does not bind
    } else if (v->text) {
      p.Add(*v->text);
    } else {
      p.Add(v->number);  // as text: the server reads it as the type the statement wants
    }
  }
  return p;
}

// What PrepareWork lends a handler's work: setup statements run in the setup's transaction,
// under the migration lock; the statements to check are kept, to be prepared once it has
// committed (a failed prepare inside it would abort the setup).
class PgSetup final : public WorkSetup {
 public:
  PgSetup(Conn& c, std::vector<std::string>* checks) : conn_(c), checks_(*checks) {}
  Status Execute(const std::string& statement) override { return conn_.Run(statement); }
  Status Check(const std::string& statement) override {
    checks_.push_back(statement);
    return Status::Ok();
  }

 private:
  Conn& conn_;
  std::vector<std::string>& checks_;
};

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
  // FOR KEY SHARE on the jobs a sync request runs, in a transaction of its own for the whole
  // run. It conflicts only with FOR UPDATE (a duplicate's takeover claim, EventBusy, and its
  // AwaitEvent, which so wait for the run to end) and deletes, not with the finish's updates
  // (FOR NO KEY UPDATE), which run on another connection of the same request.
  std::unique_ptr<JobsHold> HoldJobs(const std::vector<ClaimedJob>& jobs) override {
    if (jobs.empty()) return nullptr;
    auto handle = holds_.TryAcquire();
    if (!handle.ok()) return nullptr;
    std::vector<int64_t> ids;
    for (const ClaimedJob& job : jobs) ids.push_back(job.job_id);
    Conn& c = **handle;
    if (!c.Run("BEGIN").ok() ||
        !c.Exec("SELECT 1 FROM jobs WHERE id = ANY(ARRAY(SELECT"
                " jsonb_array_elements_text($1::jsonb)::bigint)) FOR KEY SHARE",
                Params().Add(JsonText(ids)))
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
    if (auto r = c.Exec(lock_jobs + " NOWAIT", p); r.ok() || !IsStorageBusy(r.status())) {
      return false;
    }
    const auto ms = std::max<int64_t>(1, wait.count());
    if (!c.Run("ROLLBACK; BEGIN; SET LOCAL lock_timeout = " + std::to_string(ms)).ok()) {
      return false;
    }
    (void)c.Exec(lock_jobs, p);  // returns when the holder ends, or after `wait`
    return true;                 // the handle rolls back: nothing of this wait stays locked
  }

  Status PrepareWork(const TransactionalWork& work) override {
    // Setup under the migration lock: replicas starting at once must not race on
    // CREATE TABLE IF NOT EXISTS (it is not safe against itself in PostgreSQL). The checks
    // wait for its commit (PgSetup).
    std::vector<std::string> checks;
    RETURN_IF_ERROR(TransactOn([&](Conn& c) -> Status {
      RETURN_IF_ERROR(
          Exec(c, "SELECT pg_advisory_xact_lock($1::bigint)", Params().Add(kMigrationLock)));
      PgSetup setup(c, &checks);
      return work.Setup(setup);
    }));
    // Outside a transaction: a failed prepare aborts nothing.
    return Read([&](Conn& c) -> Status {
      for (const std::string& statement : checks) {
        UserStatement st = Translate(statement);
        Status p = c.Prepare(st.sql, false, static_cast<int>(st.names.size()));
        if (!p.ok() && c.last_sqlstate() == sqlstate::kIndeterminateDatatype) {
          // e.g. `SELECT :event_id`: with every parameter text, the server can decide.
          p = c.Prepare(st.sql, true, static_cast<int>(st.names.size()));
          if (p.ok()) {
            std::lock_guard lock(user_mu_);
            user_sql_[statement].text_params = true;
          }
        }
        if (!p.ok()) return p;
      }
      return Status::Ok();
    });
  }

 private:
  // One transaction of the algorithm (sql_inbox.h) on a pooled connection.
  class PgTx final : public SqlTx {
   public:
    PgTx(Conn& c, PostgresInbox& inbox) : conn_(c), inbox_(inbox) {}
    StatusOr<SqlRows> Query(const std::string& sql, const SqlArgs& args) override {
      Params p;
      for (const SqlArg& a : args) {
        if (a.kind() == SqlArg::Kind::kNull) p.AddNull();
        if (a.kind() == SqlArg::Kind::kText) p.Add(a.text());
        if (a.kind() == SqlArg::Kind::kBytes) p.AddBytes(a.text());
        if (a.kind() == SqlArg::Kind::kInt) p.Add(a.number());
        if (a.kind() == SqlArg::Kind::kBool) p.Add(a.number() != 0);
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
      return r.empty() ? std::nullopt : std::optional<int64_t>(r.Int(0, 0));
    }
    bool Lost() override { return conn_.broken(); }
    Status Execute(const std::string& statement, const StatementParams& params) override {
      return inbox_.RunUserStatement(conn_, statement, params);
    }

   private:
    Conn& conn_;
    PostgresInbox& inbox_;
  };

  Status InsertJobs(SqlTx& tx, const Event& e, int64_t inbox_id, const std::string& now) override {
    static const std::string kInsert =
        std::string(kInsertJobs) +
        " SELECT $1, h, 'pending', $3, $4"
        " FROM jsonb_array_elements_text($2::jsonb) WITH ORDINALITY AS t (h, n) ORDER BY n";
    return tx.Run(kInsert, {inbox_id, JsonText(e.handlers), now, !e.sync_owner.empty()});
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

  // Runs one of a handler's statements with its named parameters.
  Status RunUserStatement(Conn& c, const std::string& statement, const StatementParams& params) {
    UserStatement st = Translate(statement);
    auto r = c.Exec(st.sql, NamedParams(st, params), st.text_params);
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
    Status s = [&]() -> Status {  // without BEGIN: the statement is its own transaction
      ASSIGN_OR_RETURN(pg::Pool::Handle handle, pool_.Acquire());
      return AcceptMany(*handle, group);
    }();
    if (s.ok()) return;
    for (PendingAccept* p : group) {
      if (s.code() == Status::Code::kUnavailable || group.size() == 1) {
        p->result = s;
        continue;
      }
      p->result = SqlInbox::Accept(*p->event);
    }
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
