// The inbox's algorithm, written once over the two SQL dialects (DESIGN.md, "One algorithm,
// two dialects"): accept (dedupe, sequence gate, jobs, a sync request's claim), claim (due
// jobs that head their resource, handler state), finish (the lease compare-and-swap, the
// sql handler's savepoint, the row's settling), the operator's single-row verbs, the reads,
// and the purge with its pacing. SqlInbox runs it through SqlTx, one transaction on one
// connection; each backend supplies the transactions (its writer or its pool), the SQL
// that truly differs (SqlSpelling, its locks among it), and one hook (InsertJobs).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status_macros.h"
#include "inbox/backend.h"
#include "inbox/inbox.h"

namespace hookbox {

// A statement's parameter: NULL, text, an integer, a boolean or bytes (an event's body).
class SqlArg {
 public:
  enum class Kind { kNull, kText, kInt, kBool, kBytes };
  SqlArg() = default;
  SqlArg(std::string_view text) : kind_(Kind::kText), text_(text) {}    // NOLINT: implicit
  SqlArg(const std::string& text) : kind_(Kind::kText), text_(text) {}  // NOLINT
  SqlArg(const char* text) : kind_(Kind::kText), text_(text) {}         // NOLINT
  SqlArg(int64_t n) : kind_(Kind::kInt), number_(n) {}                  // NOLINT
  SqlArg(int n) : kind_(Kind::kInt), number_(n) {}                      // NOLINT
  SqlArg(bool b) : kind_(Kind::kBool), number_(b ? 1 : 0) {}            // NOLINT
  SqlArg(std::optional<int64_t> n)
      : kind_(n ? Kind::kInt : Kind::kNull), number_(n.value_or(0)) {}  // NOLINT
  static SqlArg Bytes(std::string_view bytes) {
    SqlArg a(bytes);
    a.kind_ = Kind::kBytes;
    return a;
  }
  Kind kind() const { return kind_; }
  const std::string& text() const { return text_; }
  int64_t number() const { return number_; }

 private:
  Kind kind_ = Kind::kNull;
  std::string text_;
  int64_t number_ = 0;
};
using SqlArgs = std::vector<SqlArg>;

// What a statement returned, every value copied out as text (NULL as "", bytes decoded), and
// how many rows it changed (for INSERT, UPDATE, DELETE).
struct SqlRows {
  std::vector<std::vector<std::string>> rows;
  int64_t changed = 0;

  size_t size() const { return rows.size(); }
  bool empty() const { return rows.empty(); }
  const std::string& Text(size_t row, int col) const { return rows[row][col]; }
  int64_t Int(size_t row, int col) const;
  bool Bool(size_t row, int col) const;  // PostgreSQL's "t", SQLite's 1
};

// One transaction on one connection. SQL is written as PostgreSQL's: parameters `$N`, casts
// `::type` (SQLite reads `?N` and drops the casts: its columns take what they are given).
// Not thread-safe: it belongs to the call that runs it. As a WorkTransaction it runs a
// handler's statements (base/transactional_work.h), their named parameters bound by name.
class SqlTx : public WorkTransaction {
 public:
  virtual ~SqlTx() = default;
  virtual StatusOr<SqlRows> Query(const std::string& sql, const SqlArgs& args = {}) = 0;
  Status Run(const std::string& sql, const SqlArgs& args = {}) {
    auto r = Query(sql, args);
    return r.ok() ? Status::Ok() : r.status();
  }
  // An INSERT of one row with ON CONFLICT DO NOTHING: the new row's id, nullopt when it
  // conflicted. (SQLite reads the rowid: a RETURNING clause would cost it a statement
  // journal on every accept; PostgreSQL appends RETURNING id.)
  virtual StatusOr<std::optional<int64_t>> InsertRow(const std::string& sql,
                                                     const SqlArgs& args) = 0;
  // The transaction as a whole is gone (SQLite rolled it back; the connection broke): no
  // savepoint can be rolled back to, nothing more can be recorded.
  virtual bool Lost() = 0;
};

// The SQL that differs between the dialects, beside `$N` and casts.
struct SqlSpelling {
  SqlDialect dialect;
  bool row_locks;           // PostgreSQL: FOR UPDATE and its kin; SQLite: one writer
  const char* greatest;     // "max" / "greatest"
  const char* real;         // the type of a double
  const char* jobs_inbox;   // the claim's join of jobs j and inbox i
  const char* not_sync;     // a job for the worker pool (SQLite's partial index wants = 0)
  const char* due_order;    // the claim's ORDER BY: the order of the index it walks
  const char* skip_locked;  // the claim's lock of the jobs it picks
  // The elements of the JSON array `$1` as rows with a column `value`. PostgreSQL's unnests
  // them from an array: its planner expects 10 rows of unnest (and 100 of
  // jsonb_array_elements, for which it scans a table of a few thousand rows rather than look
  // each element up by its index).
  const char* json_rows;
  const char* no_index;  // before a column SQLite's planner must not use an index for
  // The statements that take a key's lock until the transaction ends, with `$1` the key and
  // `$2` its purpose (KeyLock): waiting for it ("": no such locks), and without waiting (one
  // row: true when taken; used only where there are row locks).
  const char* lock_key;
  const char* try_lock_key;
  // A bulk verb's write transaction takes chunks until it has held the write lock this long
  // (SQLite, whose one write lock the daemon's accepts share); 0: one chunk of the request's
  // batch per transaction (PostgreSQL, whose row locks leave other rows' accepts free).
  std::chrono::milliseconds bulk_hold;

  // A time column as RFC 3339 UTC text with milliseconds, as FormatTime writes it.
  std::string Time(const std::string& column) const;
  // `clause` where rows are locked, "" on SQLite.
  const char* Lock(const char* clause) const { return row_locks ? clause : ""; }
};
extern const SqlSpelling kSqliteSpelling;
extern const SqlSpelling kPostgresSpelling;

// The head of every insert of an event's row (the accept's and the grouped accept's): the
// columns in the order of its 12 parameters.
inline constexpr const char* kInsertEvent =
    "INSERT INTO inbox (endpoint, event_id, id_source, event_type, resource_id, sequence,"
    " sequence_key, body_sha256, headers, body, status, received_at)";
// The head of every insert of an event's jobs, one row per handler: the accept's (one
// statement per job on SQLite, one for all on PostgreSQL) and the grouped accept's. Each
// row is pending, due at the accept's time, `sync` when a request runs it.
inline constexpr const char* kInsertJobs =
    "INSERT INTO jobs (inbox_id, handler, status, next_attempt_at, sync)";
// The inbox row's columns, as ReadRow reads them (a 15th, when selected, follows).
std::string RowColumns(const SqlSpelling& d);
InboxRow ReadRow(const SqlRows& q, size_t row);
HandlerState ReadState(const SqlRows& q, size_t row);
// `columns` of the row of (endpoint, event_id); NotFound when there is none.
StatusOr<SqlRows> FindEvent(SqlTx& tx, const std::string& columns, const std::string& endpoint,
                            const std::string& event_id);
// A statement's JSON parameter, such as the element list of SqlSpelling::json_rows (text that
// is not UTF-8 is replaced, never thrown on).
std::string JsonText(const nlohmann::json& value);
// SqlValue (backend.h) parameters as SqlArgs.
SqlArgs ArgsOf(const std::vector<SqlValue>& values);

class SqlInbox : public Inbox {
 public:
  explicit SqlInbox(const SqlSpelling& spelling) : d_(spelling) {}

  // How a transaction of the algorithm runs.
  enum class TxKind {
    kWrite,     // durable
    kClaim,     // a write that need not wait for the log's flush (a lost claim only reruns)
    kRead,      // reads, each statement as of its own moment
    kSnapshot,  // reads as of one moment
  };
  using TxFn = std::function<Status(SqlTx&)>;
  virtual Status Transact(TxKind kind, const TxFn& fn) = 0;

  StatusOr<AcceptResult> Accept(const Event& event) override;
  using Inbox::ClaimJobs;
  StatusOr<std::vector<ClaimedJob>> ClaimJobs(const std::string& owner, int max, TimePoint now,
                                              std::chrono::milliseconds lease,
                                              const ClaimLimits& limits) override;
  StatusOr<int64_t> SetPaused(const std::vector<HandlerRef>& handlers, bool paused,
                              const std::string& reason, TimePoint now) override;
  StatusOr<std::vector<HandlerStatus>> Handlers(TimePoint now, bool count_jobs) override;
  StatusOr<std::optional<CircuitTransition>> RecordCircuit(const HandlerRef& handler,
                                                           Outcome outcome,
                                                           const CircuitLimit& limit,
                                                           TimePoint now) override;
  StatusOr<Outcome> FinishJob(const ClaimedJob& job, const JobOutcome& outcome,
                              const TransactionalWork* work,
                              const JobOutcome* work_failed) override;
  std::vector<StatusOr<Outcome>> FinishJobs(const std::vector<FinishRequest>& finishes) override;
  StatusOr<EventClaim> ClaimEvent(const std::string& endpoint, const std::string& event_id,
                                  const std::string& owner, TimePoint now,
                                  std::chrono::milliseconds lease) override;
  Status RenewLeases(std::span<const ClaimedJob> jobs, TimePoint now,
                     std::chrono::milliseconds lease) override;
  StatusOr<int> Retry(const std::string& endpoint, const std::string& event_id,
                      TimePoint now) override;
  Status HoldForHandler(const std::vector<ClaimedJob>& jobs, TimePoint now) override;
  StatusOr<int64_t> ReleaseHeld(const std::vector<HandlerRef>& handlers, TimePoint now) override;
  StatusOr<std::vector<HandlerBacklog>> UnfinishedByHandler() override;
  StatusOr<ReassignCounts> Reassign(const std::string& endpoint, const std::string& from,
                                    const std::string& to, TimePoint now) override;
  StatusOr<int64_t> DropJobs(const std::string& endpoint, const std::string& handler,
                             TimePoint now) override;
  Status Heartbeat(const InstanceBeat& beat) override;
  StatusOr<std::vector<ExpiredInstance>> ReleaseExpiredLeases(TimePoint now,
                                                              const std::string& self,
                                                              TimePoint forget_before) override;
  StatusOr<int64_t> RemoveInstance(const std::string& id, TimePoint now) override;
  StatusOr<std::vector<InboxRow>> List(const ListFilter& filter) override;
  StatusOr<int64_t> Count(const ListFilter& filter) override;
  StatusOr<std::vector<DeadJob>> DeadJobs(int64_t before_job_id, int limit) override;
  StatusOr<std::vector<DeadJob>> DeadJobsOf(std::span<const int64_t> inbox_ids) override;
  StatusOr<std::vector<HandlerRef>> KnownHandlers() override;
  StatusOr<bool> ForgetHandler(const HandlerRef& handler) override;
  StatusOr<InboxDetail> Show(const std::string& endpoint, const std::string& event_id) override;
  Status Clear(const std::string& endpoint, const std::string& event_id, TimePoint now) override;
  StatusOr<InboxStats> Stats() override;
  StatusOr<QueueStats> Queue(bool count_done) override;
  StatusOr<PurgeCounts> Purge(const PurgeRequest& request) override;
  StatusOr<BulkPlan> PlanBulk(const BulkRequest& request) override;
  StatusOr<int64_t> RetryDead(const BulkRequest& request) override;
  StatusOr<int64_t> RetryWaiting(const BulkRequest& request) override;
  StatusOr<int64_t> Replay(const BulkRequest& request) override;
  Status Ping() override;

 protected:
  // The accepted row's jobs, in handler order (a hook: PostgreSQL inserts them in one
  // statement).
  virtual Status InsertJobs(SqlTx& tx, const Event& e, int64_t inbox_id, const std::string& now);
  // A duplicate's count on the stored row (also for PostgreSQL's grouped accepts).
  Status CountDuplicate(SqlTx& tx, const Event& e, const std::string& now, AcceptResult* out);

  const SqlSpelling& d_;

 private:
  // ---- The locks, taken where the spelling has them (PostgreSQL); SQLite's one writer runs
  // one write at a time. Which of a resource's (or body's) locks: accepts of one resource one
  // at a time, claims of one resource one at a time, accepts of one body one at a time. The
  // values are PostgreSQL's advisory lock seeds: replicas of two versions must agree on them.
  enum class KeyLock { kAccept = 1, kClaim = 2, kBody = 3 };
  Status LockKey(SqlTx& tx, KeyLock which, const std::string& key);
  static std::string ResourceKey(const std::string& endpoint, const std::string& resource) {
    return endpoint + '\x1f' + resource;
  }
  // The jobs of `due` that still head their resource, onto *out.
  Status KeepHeads(SqlTx& tx, const std::string& now, std::vector<ClaimedJob>& due,
                   std::vector<ClaimedJob>* out);
  // Whether a job of the event holds a live lease (the event is busy for a sync claim).
  // A failure with *busy set: busy, and the transaction must roll back.
  Status EventBusy(SqlTx& tx, int64_t inbox_id, const std::string& now, bool* busy);

  Status AcceptInto(SqlTx& tx, const Event& e, AcceptResult* out);
  Status SettleRows(SqlTx& tx, const std::map<int64_t, std::string>& rows);  // id -> time
  StatusOr<bool> BodyDuplicate(SqlTx& tx, const Event& e, const std::string& now,
                               AcceptResult* out);
  Status AddJobs(SqlTx& tx, const Event& e, int64_t inbox_id, const std::string& now,
                 AcceptResult* out);
  Status RunSyncWork(SqlTx& tx, const Event& e, int64_t inbox_id, const std::string& now);
  Status FinishMany(SqlTx& tx, const std::vector<FinishRequest>& finishes,
                    std::vector<StatusOr<Outcome>>* results);
  Status FinishAlone(SqlTx& tx, const FinishRequest& f, StatusOr<Outcome>* result);
  Status FinishInto(SqlTx& tx, const FinishRequest& f, Outcome* recorded);
  Status RunWork(SqlTx& tx, const FinishRequest& f, JobOutcome* outcome);
  Status ClaimInto(SqlTx& tx, const std::string& owner, int max, TimePoint now,
                   std::chrono::milliseconds lease, const ClaimLimits& limits,
                   std::vector<ClaimedJob>* out);
  using HandlerKey = std::pair<std::string, std::string>;
  // One claim's terms and what it has taken so far (ClaimInto's steps).
  struct ClaimRun {
    SqlTx& tx;
    const std::string& owner;
    int max;
    TimePoint now;
    std::string now_text;
    std::chrono::milliseconds lease;
    std::vector<ClaimedJob>* out;
    std::set<int64_t> rows;  // the inbox rows of the jobs taken, for MarkProcessing
  };
  Status ClaimLanes(ClaimRun& run, std::set<HandlerKey> left_out,
                    std::map<HandlerKey, int>& room_of);
  Status Take(ClaimRun& run, std::vector<ClaimedJob>& jobs);
  Status DueJobs(SqlTx& tx, const std::string& now, int max, const std::vector<HandlerKey>& apart,
                 bool only, std::vector<ClaimedJob>* out);
  Status ClaimEventInto(SqlTx& tx, int64_t inbox_id, const std::string& owner, TimePoint now,
                        std::chrono::milliseconds lease, EventClaim* out);
  Status LeaseJobs(SqlTx& tx, std::vector<ClaimedJob>& jobs, const std::string& owner,
                   TimePoint now, std::chrono::milliseconds lease, std::set<int64_t>* rows);
  Status MarkProcessing(SqlTx& tx, const std::set<int64_t>& rows);
  // `*found`, when given: false for a handler with no row, which is then not created (a
  // held handler's row that a `handler resume`/`forget` deleted since the claim listed it).
  Status LoadState(SqlTx& tx, const std::string& endpoint, const std::string& handler,
                   HandlerState* out, bool* found = nullptr);
  Status StoreState(SqlTx& tx, const HandlerState& st);
  std::string StateColumns() const;
  Status ShowInto(SqlTx& tx, const std::string& endpoint, const std::string& event_id,
                  InboxDetail* d);
  // One purge transaction's work: how many rows it took up, how many of them it deleted.
  struct PurgeBatch {
    int64_t taken = 0, deleted = 0;
  };
  using PurgeBatchFn = std::function<StatusOr<PurgeBatch>(SqlTx&, int64_t batch)>;
  StatusOr<int64_t> PurgeRows(const PurgeRequest& r, const std::string& count_sql,
                              const SqlArgs& args, const PurgeBatchFn& delete_batch);
  StatusOr<PurgeBatch> PurgeInboxBatch(SqlTx& tx, const SqlArgs& args, int64_t batch);
  // A job a bulk verb changes, with its row and its resource's claim lock key ("" = no
  // resource, or a dialect without row locks).
  struct BulkTarget {
    int64_t job, row;
    std::string resource_key;
  };
  StatusOr<std::vector<BulkTarget>> BulkTargets(const BulkRequest& r);
  StatusOr<int64_t> ActBulk(const BulkRequest& r);
  Status RearmChunk(SqlTx& tx, const BulkRequest& r, const std::vector<BulkTarget>& targets,
                    size_t from, size_t to, int64_t* changed);
};

// Runs `read` in a transaction of `kind` and returns what it made: `read(tx, out)` fills
// `out`, a fresh T on each try.
template <typename T, typename F>
StatusOr<T> ReadInto(SqlInbox& inbox, SqlInbox::TxKind kind, F&& read) {
  T out{};
  RETURN_IF_ERROR(inbox.Transact(kind, [&](SqlTx& tx) {
    out = T{};
    return read(tx, out);
  }));
  return out;
}

// Runs one query in a read transaction and makes a T of each row it returns, `row(q, i)`.
template <typename T, typename F>
StatusOr<std::vector<T>> ReadRows(SqlInbox& inbox, const std::string& sql, const SqlArgs& args,
                                  F&& row) {
  return ReadInto<std::vector<T>>(inbox, SqlInbox::TxKind::kRead,
                                  [&](SqlTx& tx, std::vector<T>& out) -> Status {
                                    ASSIGN_OR_RETURN(const SqlRows& q, tx.Query(sql, args));
                                    for (size_t i = 0; i < q.size(); ++i) out.push_back(row(q, i));
                                    return Status::Ok();
                                  });
}

}  // namespace hookbox
