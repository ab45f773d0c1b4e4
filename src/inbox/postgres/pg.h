// RAII around libpq for the PostgreSQL inbox: a Conn owns one server connection and a cache
// of prepared statements (prepared on first use, reused for every event), a Result owns a
// PGresult, Params collects positional parameters ($1..$n), and a Pool hands out a few
// connections, drops broken ones and reconnects with backoff after a server restart.
// Errors become Status: a lost connection, a server shutting down, lock or statement
// timeouts, deadlocks and resource exhaustion are Unavailable (the caller answers 503);
// everything else is Internal. The SQLSTATEs that decide it are named once (namespace sqlstate).
//
// A Conn belongs to one thread at a time (the Pool's handle); the Pool is thread-safe.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace hookbox::pg {

// The SQLSTATEs hookbox tells apart (PostgreSQL's "Error Codes" appendix), and the groups it
// maps onto a Status (Conn::Error). Every comparison of a SQLSTATE is against these.
namespace sqlstate {

constexpr std::string_view kConnectionExceptionClass = "08";  // the class: 08000, 08006, ...
constexpr std::string_view kAdminShutdown = "57P01";
constexpr std::string_view kCrashShutdown = "57P02";
constexpr std::string_view kCannotConnectNow = "57P03";
constexpr std::string_view kLockNotAvailable = "55P03";
constexpr std::string_view kSerializationFailure = "40001";
constexpr std::string_view kDeadlockDetected = "40P01";
constexpr std::string_view kQueryCanceled = "57014";
constexpr std::string_view kReadOnlySqlTransaction = "25006";
constexpr std::string_view kInsufficientResourcesClass = "53";
constexpr std::string_view kSystemErrorClass = "58";
constexpr std::string_view kCharacterNotInRepertoire = "22021";
constexpr std::string_view kUntranslatableCharacter = "22P05";
constexpr std::string_view kIndeterminateDatatype = "42P18";

constexpr bool InClass(std::string_view code, std::string_view cls) {
  return code.substr(0, cls.size()) == cls;
}

// The session is gone: a connection exception, or the server terminating or refusing it.
constexpr bool IsConnectionLost(std::string_view code) {
  return InClass(code, kConnectionExceptionClass) || code == kAdminShutdown ||
         code == kCrashShutdown || code == kCannotConnectNow;
}

// Contention: a lock timeout, a serialization failure, a deadlock. The next try may well
// succeed.
constexpr bool IsContention(std::string_view code) {
  return code == kLockNotAvailable || code == kSerializationFailure || code == kDeadlockDetected;
}

// The server cannot serve the statement now: cancelled (statement_timeout), read-only (a
// standby after failover), insufficient resources (disk full, too many connections), a
// system error. The next try may well succeed.
constexpr bool IsServerUnavailable(std::string_view code) {
  return code == kQueryCanceled || code == kReadOnlySqlTransaction ||
         InClass(code, kInsufficientResourcesClass) || InClass(code, kSystemErrorClass);
}

// Text the database cannot store in its encoding.
constexpr bool IsUnstorableText(std::string_view code) {
  return code == kCharacterNotInRepertoire || code == kUntranslatableCharacter;
}

}  // namespace sqlstate

// Positional parameters, text format unless added as bytes (binary, for bytea).
class Params {
 public:
  Params& Add(std::string_view text) {
    values_.emplace_back(text);
    null_.push_back(false);
    binary_.push_back(false);
    return *this;
  }
  Params& Add(const char* text) { return Add(std::string_view(text)); }
  Params& Add(const std::string& text) { return Add(std::string_view(text)); }
  Params& Add(int64_t v) { return Add(std::to_string(v)); }
  Params& Add(int v) { return Add(std::to_string(v)); }
  Params& Add(bool v) { return Add(v ? "true" : "false"); }
  Params& Add(std::optional<int64_t> v) { return v ? Add(*v) : AddNull(); }
  Params& AddNull() {
    values_.emplace_back();
    null_.push_back(true);
    binary_.push_back(false);
    return *this;
  }
  Params& AddBytes(std::string_view bytes) {
    Add(bytes);
    binary_.back() = true;
    return *this;
  }
  size_t size() const { return values_.size(); }

 private:
  friend class Conn;
  std::vector<std::string> values_;
  std::vector<bool> null_, binary_;
};

// A query's rows, text format. Columns by index.
class Result {
 public:
  Result() = default;
  explicit Result(PGresult* r) : r_(r, PQclear) {}
  int rows() const { return r_ ? PQntuples(r_.get()) : 0; }
  int cols() const { return r_ ? PQnfields(r_.get()) : 0; }
  // A bytea column (read it with Bytes).
  bool IsBytes(int col) const { return PQftype(r_.get(), col) == 17; }  // BYTEAOID
  bool IsNull(int row, int col) const { return PQgetisnull(r_.get(), row, col); }
  std::string Text(int row, int col) const {
    return std::string(PQgetvalue(r_.get(), row, col),
                       static_cast<size_t>(PQgetlength(r_.get(), row, col)));
  }
  int64_t Int(int row, int col) const;
  bool Bool(int row, int col) const { return PQgetvalue(r_.get(), row, col)[0] == 't'; }
  // A bytea column (hex text format) as its bytes.
  std::string Bytes(int row, int col) const;
  // Rows an INSERT, UPDATE or DELETE touched.
  int64_t Affected() const;

 private:
  std::shared_ptr<PGresult> r_;
};

class Conn final {
 public:
  // Connects with libpq's URL/keyword syntax; `setup` statements run once after connecting.
  static StatusOr<std::unique_ptr<Conn>> Connect(const std::string& url,
                                                 const std::vector<std::string>& setup);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // A statement with parameters, prepared on first use on this connection and executed.
  // Parameter types are inferred by the server, or all text with `text_params` (for the
  // operator's statements where the server cannot infer one).
  StatusOr<Result> Exec(const std::string& sql, const Params& params = {},
                        bool text_params = false);
  // A statement without parameters, not prepared (BEGIN, SAVEPOINT, DDL, several statements).
  Status Run(const std::string& sql);
  // Prepares `sql` (cached) without running it: syntax, names and types are checked.
  Status Prepare(const std::string& sql, bool text_params = false, int n_params = 0);

  // The connection is gone (server restart, network): the pool must not reuse it.
  bool broken() const { return broken_ || PQstatus(conn_) != CONNECTION_OK; }
  bool idle() const { return PQtransactionStatus(conn_) == PQTRANS_IDLE; }
  // A statement of the open transaction failed: only ROLLBACK (TO SAVEPOINT) is possible.
  bool failed_transaction() const { return PQtransactionStatus(conn_) == PQTRANS_INERROR; }
  // An idle pooled connection whose server closed it (or sent a termination notice).
  bool ClosedByServer();

  // The Status for a failed call: Unavailable for connection, shutdown, timeout, deadlock
  // and resource errors, InvalidArgument for text the server cannot store, else Internal.
  Status Error(const PGresult* r, std::string_view what);
  // The SQLSTATE of the last failed call ("" when it had none), e.g. sqlstate::kLockNotAvailable.
  const std::string& last_sqlstate() const { return last_sqlstate_; }

 private:
  explicit Conn(PGconn* c) : conn_(c) {}
  StatusOr<std::string> PreparedName(const std::string& sql, bool text_params, int n_params);

  PGconn* conn_;
  bool broken_ = false;
  std::string last_sqlstate_;
  std::unordered_map<std::string, std::string> prepared_;  // sql -> statement name
};

// Hands out up to `size` connections. A broken or closed connection is dropped, not reused;
// after a failed connect, new connects wait out a backoff (100 ms doubling to 2 s) and
// callers get Unavailable at once meanwhile, so a database that is down costs requests
// nothing but a fast 503.
class Pool {
 public:
  Pool(std::string url, std::vector<std::string> setup, int size)
      : url_(std::move(url)), setup_(std::move(setup)), size_(size) {}
  ~Pool();

  class Handle {
   public:
    Handle(Pool* pool, std::unique_ptr<Conn> conn) : pool_(pool), conn_(std::move(conn)) {}
    Handle(Handle&&) = default;
    ~Handle() {
      if (pool_ && conn_) pool_->Release(std::move(conn_));
    }
    Conn& operator*() { return *conn_; }
    Conn* operator->() { return conn_.get(); }

   private:
    Pool* pool_;
    std::unique_ptr<Conn> conn_;
  };

  StatusOr<Handle> Acquire();
  // Like Acquire, but Unavailable at once instead of waiting when every connection is busy.
  StatusOr<Handle> TryAcquire();

 private:
  void Release(std::unique_ptr<Conn> conn);
  StatusOr<Handle> Take(bool wait);

  const std::string url_;
  const std::vector<std::string> setup_;
  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Conn>> idle_;
  int open_ = 0;  // idle + handed out + connecting
  std::chrono::steady_clock::time_point retry_at_{};
  std::chrono::milliseconds backoff_{0};
  Status last_error_;
};

// "postgres://" or "postgresql://".
bool IsPostgresUrl(std::string_view database);

// The URL with its password (user:PASSWORD@ and ?password=) replaced by "***", for logs.
std::string RedactUrl(std::string_view url);

// The Status of a statement whose rows are not wanted.
inline Status Exec(Conn& c, const std::string& sql, const Params& p = {}) {
  auto r = c.Exec(sql, p);
  return r.ok() ? Status::Ok() : r.status();
}

}  // namespace hookbox::pg
