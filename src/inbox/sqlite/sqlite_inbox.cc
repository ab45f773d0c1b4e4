// The SQLite inbox: group-committing writer thread, the accept transaction (dedupe, sequence
// gate, jobs) and the operator's reads (see sqlite_inbox.h).
#include "inbox/sqlite/sqlite_inbox.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "inbox/migration.h"
#include "inbox/sqlite/db.h"

namespace hookbox {
namespace {

using sqlite::Db;

// Result of a StatusOr-returning Prepare, or return its failure.
#define HOOKBOX_PREPARE(var, db, sql)  \
  auto var##_or = (db).Prepare(sql);   \
  if (!var##_or.ok()) return var##_or.status(); \
  auto& var = *var##_or.value()

Status Migrate(Db& db, std::vector<std::string>* applied) {
  Status s = db.Exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
      "name TEXT NOT NULL, applied_at TEXT NOT NULL)");
  if (!s.ok()) return s;
  sqlite::Transaction tx(db);
  if (s = tx.Begin(); !s.ok()) return s;
  int64_t current = 0;
  {
    HOOKBOX_PREPARE(q, db, "SELECT coalesce(max(version), 0) FROM schema_migrations");
    if (q.Step(&s)) current = q.Int(0);
    if (!s.ok()) return s;
  }
  for (const Migration& m : kSqliteMigrations) {
    if (m.version <= current) continue;
    if (s = db.Exec(m.sql); !s.ok()) return s;
    HOOKBOX_PREPARE(rec, db,
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
    rec.Bind(1, int64_t{m.version}).Bind(2, m.name).Bind(3, FormatTime(std::chrono::system_clock::now()));
    if (s = rec.Run(); !s.ok()) return s;
    if (applied) applied->push_back(m.name);
  }
  return tx.Commit();
}

// The accept transaction's body, run inside the writer's SAVEPOINT for this event.
Status AcceptInto(Db& db, const Event& e, AcceptResult* out) {
  Status s;
  const std::string now = FormatTime(e.received_at);
  const bool gated = !e.resource_id.empty() && e.sequence_key.has_value();

  // Sequence gate: lower than the last accepted sequence of the resource is stale; equal is
  // not (second-resolution timestamps tie, and a redelivery after `inbox clear` must run).
  bool stale = false;
  if (gated) {
    HOOKBOX_PREPARE(q, db,
                    "SELECT last_sequence FROM sequences WHERE endpoint = ? AND resource_id = ?");
    q.Bind(1, e.endpoint).Bind(2, e.resource_id);
    if (q.Step(&s)) stale = *e.sequence_key < q.Int(0);
    if (!s.ok()) return s;
  }
  const char* status = stale ? "stale" : e.handlers.empty() ? "ignored" : "pending";

  {
    HOOKBOX_PREPARE(ins, db,
                    "INSERT INTO inbox (endpoint, event_id, id_source, event_type, resource_id,"
                    " sequence, sequence_key, body_sha256, headers, body, status, received_at)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
                    " ON CONFLICT (endpoint, event_id) DO NOTHING");
    ins.Bind(1, e.endpoint).Bind(2, e.event_id).Bind(3, e.id_source).Bind(4, e.event_type);
    ins.Bind(5, e.resource_id).Bind(6, e.sequence).Bind(7, e.sequence_key);
    ins.Bind(8, e.body_sha256).Bind(9, e.headers_json).BindBlob(10, e.body);
    ins.Bind(11, status).Bind(12, now);
    if (s = ins.Run(); !s.ok()) return s;
  }

  if (db.Changes() == 0) {
    // Duplicate: count it on the original row. The gate is not consulted or advanced.
    HOOKBOX_PREPARE(q, db, "SELECT body_sha256 FROM inbox WHERE endpoint = ? AND event_id = ?");
    q.Bind(1, e.endpoint).Bind(2, e.event_id);
    std::string stored;
    if (q.Step(&s)) stored = q.Text(0);
    if (!s.ok()) return s;
    out->verdict = Verdict::kDuplicate;
    out->body_changed = stored != e.body_sha256;
    if (out->body_changed && e.strict_body) {
      return Status::Conflict("event id already stored with another body", e.event_id);
    }
    HOOKBOX_PREPARE(up, db,
                    "UPDATE inbox SET duplicates = duplicates + 1, last_duplicate_at = ?"
                    " WHERE endpoint = ? AND event_id = ?");
    up.Bind(1, now).Bind(2, e.endpoint).Bind(3, e.event_id);
    return up.Run();
  }

  const int64_t inbox_id = db.LastInsertId();
  if (stale) {
    out->verdict = Verdict::kStale;
    return Status::Ok();
  }
  if (gated) {
    HOOKBOX_PREPARE(up, db,
                    "INSERT INTO sequences (endpoint, resource_id, last_sequence, last_event_id,"
                    " updated_at) VALUES (?,?,?,?,?) ON CONFLICT (endpoint, resource_id) DO UPDATE"
                    " SET last_sequence = excluded.last_sequence,"
                    " last_event_id = excluded.last_event_id, updated_at = excluded.updated_at");
    up.Bind(1, e.endpoint).Bind(2, e.resource_id).Bind(3, *e.sequence_key);
    up.Bind(4, e.event_id).Bind(5, now);
    if (s = up.Run(); !s.ok()) return s;
  }
  if (e.handlers.empty()) {
    out->verdict = Verdict::kIgnored;
    return Status::Ok();
  }
  HOOKBOX_PREPARE(job, db,
                  "INSERT INTO jobs (inbox_id, handler, status, next_attempt_at)"
                  " VALUES (?, ?, 'pending', ?)");
  for (const std::string& handler : e.handlers) {
    job.Bind(1, inbox_id).Bind(2, handler).Bind(3, now);
    if (s = job.Run(); !s.ok()) return s;
    job.Reset();
  }
  out->verdict = Verdict::kAccepted;
  return Status::Ok();
}

InboxRow ReadRow(sqlite::Stmt& q) {
  InboxRow r;
  r.id = q.Int(0);
  r.endpoint = q.Text(1);
  r.event_id = q.Text(2);
  r.id_source = q.Text(3);
  r.event_type = q.Text(4);
  r.resource_id = q.Text(5);
  r.sequence = q.Text(6);
  r.body_sha256 = q.Text(7);
  r.headers_json = q.Text(8);
  r.status = q.Text(9);
  r.received_at = q.Text(10);
  r.processed_at = q.Text(11);
  r.duplicates = q.Int(12);
  r.last_duplicate_at = q.Text(13);
  return r;
}

constexpr const char* kRowColumns =
    "id, endpoint, event_id, id_source, event_type, resource_id, sequence, body_sha256,"
    " headers, status, received_at, processed_at, duplicates, last_duplicate_at";

class SqliteInbox final : public Inbox {
 public:
  SqliteInbox(std::unique_ptr<Db> writer, std::unique_ptr<Db> reader)
      : writer_db_(std::move(writer)), reader_(std::move(reader)) {
    writer_ = std::thread([this] { WriterLoop(); });
  }

  ~SqliteInbox() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    writer_.join();
  }

  StatusOr<AcceptResult> Accept(const Event& event) override {
    AcceptResult result{Verdict::kAccepted};
    Status s = Write([&](Db& db) { return AcceptInto(db, event, &result); });
    if (!s.ok()) return s;
    return result;
  }

  Status Clear(const std::string& endpoint, const std::string& event_id) override {
    return Write([&](Db& db) -> Status {
      // Jobs and attempts go with the row (ON DELETE CASCADE).
      HOOKBOX_PREPARE(del, db, "DELETE FROM inbox WHERE endpoint = ? AND event_id = ?");
      del.Bind(1, endpoint).Bind(2, event_id);
      Status s = del.Run();
      if (s.ok() && db.Changes() == 0) {
        return Status::NotFound("no such event", endpoint + " " + event_id);
      }
      return s;
    });
  }

  StatusOr<std::vector<InboxRow>> List(const ListFilter& f) override {
    std::lock_guard lock(read_mu_);
    HOOKBOX_PREPARE(q, *reader_,
                    std::string("SELECT ") + kRowColumns +
                        " FROM inbox WHERE (?1 = '' OR endpoint = ?1) AND (?2 = '' OR status = ?2)"
                        " AND (?3 = '' OR received_at >= ?3) ORDER BY received_at DESC, id DESC"
                        " LIMIT ?4");
    q.Bind(1, f.endpoint).Bind(2, f.status).Bind(3, f.since).Bind(4, int64_t{f.limit});
    std::vector<InboxRow> rows;
    Status s;
    while (q.Step(&s)) rows.push_back(ReadRow(q));
    if (!s.ok()) return s;
    return rows;
  }

  StatusOr<InboxDetail> Show(const std::string& endpoint, const std::string& event_id) override {
    std::lock_guard lock(read_mu_);
    Db& db = *reader_;
    // One read transaction: the row, its jobs and their attempts as of one moment.
    Status s = db.Exec("BEGIN");
    if (!s.ok()) return s;
    auto detail = ShowLocked(db, endpoint, event_id);
    (void)db.Exec("COMMIT");
    return detail;
  }

  StatusOr<InboxStats> Stats() override {
    std::lock_guard lock(read_mu_);
    HOOKBOX_PREPARE(q, *reader_,
                    "SELECT endpoint, status, count(*) FROM inbox GROUP BY endpoint, status");
    InboxStats stats;
    Status s;
    while (q.Step(&s)) stats[q.Text(0)][q.Text(1)] = q.Int(2);
    if (!s.ok()) return s;
    return stats;
  }

  Status Ping() override {
    std::lock_guard lock(read_mu_);
    HOOKBOX_PREPARE(q, *reader_, "SELECT count(*) FROM schema_migrations");
    return q.Run();
  }

 private:
  struct PendingWrite {
    std::function<Status(Db&)> fn;
    std::promise<Status> done;
  };

  // Queues fn for the writer thread and waits for the commit (or failure) of its group.
  Status Write(std::function<Status(Db&)> fn) {
    PendingWrite w{std::move(fn), {}};
    std::future<Status> done = w.done.get_future();
    {
      std::lock_guard lock(mu_);
      queue_.push_back(&w);
    }
    cv_.notify_one();
    return done.get();
  }

  void WriterLoop() {
    for (;;) {
      std::vector<PendingWrite*> batch;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything queued was written
        // Bounded groups keep one slow fsync from holding thousands of callers.
        while (!queue_.empty() && batch.size() < kMaxGroup) {
          batch.push_back(queue_.front());
          queue_.pop_front();
        }
      }
      std::vector<Status> results = RunGroup(batch);
      for (size_t i = 0; i < batch.size(); ++i) batch[i]->done.set_value(results[i]);
    }
  }

  // One transaction for the whole group, a SAVEPOINT per write.
  std::vector<Status> RunGroup(const std::vector<PendingWrite*>& batch) {
    Db& db = *writer_db_;
    std::vector<Status> results(batch.size());
    sqlite::Transaction tx(db);
    if (Status s = tx.Begin(); !s.ok()) {
      std::fill(results.begin(), results.end(), s);
      return results;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      (void)db.Exec("SAVEPOINT w");
      results[i] = batch[i]->fn(db);
      if (results[i].ok()) {
        (void)db.Exec("RELEASE w");
        continue;
      }
      if (!db.InTransaction()) {
        // SQLite rolled the whole transaction back (disk full, I/O error): the group's
        // earlier writes are gone too, so every caller gets the failure.
        Status lost = results[i].code() == Status::Code::kUnavailable
                          ? results[i]
                          : Status::Unavailable("storage unavailable", results[i].ToString());
        for (size_t j = 0; j < batch.size(); ++j) {
          if (j != i) results[j] = lost;
        }
        return results;
      }
      (void)db.Exec("ROLLBACK TO w");
      (void)db.Exec("RELEASE w");
    }
    if (Status s = tx.Commit(); !s.ok()) {
      Status lost = s.code() == Status::Code::kUnavailable
                        ? s
                        : Status::Unavailable("storage unavailable", s.ToString());
      std::fill(results.begin(), results.end(), lost);
    }
    return results;
  }

  StatusOr<InboxDetail> ShowLocked(Db& db, const std::string& endpoint,
                                   const std::string& event_id) {
    InboxDetail d;
    Status s;
    {
      HOOKBOX_PREPARE(q, db, std::string("SELECT ") + kRowColumns +
                                 ", body FROM inbox WHERE endpoint = ? AND event_id = ?");
      q.Bind(1, endpoint).Bind(2, event_id);
      if (!q.Step(&s)) {
        if (!s.ok()) return s;
        return Status::NotFound("no such event", endpoint + " " + event_id);
      }
      d.row = ReadRow(q);
      d.row.body = q.Text(14);
    }
    HOOKBOX_PREPARE(jq, db,
                    "SELECT id, handler, status, attempts, next_attempt_at, lease_owner,"
                    " lease_until, last_error FROM jobs WHERE inbox_id = ? ORDER BY id");
    jq.Bind(1, d.row.id);
    while (jq.Step(&s)) {
      JobRow j;
      j.id = jq.Int(0);
      j.handler = jq.Text(1);
      j.status = jq.Text(2);
      j.attempts = jq.Int(3);
      j.next_attempt_at = jq.Text(4);
      j.lease_owner = jq.Text(5);
      j.lease_until = jq.Text(6);
      j.last_error = jq.Text(7);
      d.jobs.push_back(std::move(j));
    }
    if (!s.ok()) return s;
    HOOKBOX_PREPARE(aq, db,
                    "SELECT number, started_at, finished_at, outcome, detail FROM attempts"
                    " WHERE job = ? ORDER BY number");
    for (JobRow& j : d.jobs) {
      aq.Bind(1, j.id);
      while (aq.Step(&s)) {
        j.attempt_rows.push_back({aq.Int(0), aq.Text(1), aq.Text(2), aq.Text(3), aq.Text(4)});
      }
      if (!s.ok()) return s;
      aq.Reset();
    }
    return d;
  }

  static constexpr size_t kMaxGroup = 256;

  std::unique_ptr<Db> writer_db_;  // owned by writer_ thread after construction
  std::mutex mu_;                  // guards queue_, stopping_
  std::condition_variable cv_;
  std::deque<PendingWrite*> queue_;
  bool stopping_ = false;
  std::thread writer_;

  std::mutex read_mu_;  // guards reader_
  std::unique_ptr<Db> reader_;
};

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kAccepted: return "accepted";
    case Verdict::kDuplicate: return "duplicate";
    case Verdict::kStale: return "stale";
    case Verdict::kIgnored: return "ignored";
  }
  return "?";
}

StatusOr<std::unique_ptr<Inbox>> OpenSqliteInbox(const InboxOptions& options,
                                                 std::vector<std::string>* applied) {
  auto writer = Db::Open(options.database, options.create, options.durable);
  if (!writer.ok()) return writer.status();
  if (Status s = Migrate(**writer, applied); !s.ok()) {
    return Status::Unavailable("cannot migrate database", s.ToString());
  }
  auto reader = Db::Open(options.database, false, options.durable);
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<Inbox>(
      std::make_unique<SqliteInbox>(std::move(*writer), std::move(*reader)));
}

}  // namespace hookbox
