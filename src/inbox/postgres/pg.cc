// libpq connection, statement cache, error mapping and the connection pool (see pg.h).
#include "inbox/postgres/pg.h"

#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/ascii.h"
#include "base/status_macros.h"

namespace hookbox::pg {
namespace {

constexpr Oid kTextOid = 25;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool IsPostgresUrl(std::string_view database) {
  return StartsWith(database, "postgres://") || StartsWith(database, "postgresql://");
}

std::string RedactUrl(std::string_view url) {
  // postgresql://[user[:password]@][host][/dbname][?key=value&...]: reserved characters
  // inside the parts are percent-encoded, so '@', '/', '?', '&' and '=' delimit.
  std::string out(url);
  const size_t scheme = out.find("://");
  if (scheme == std::string::npos) return out;
  const size_t start = scheme + 3;
  const size_t end = std::min(out.find_first_of("/?", start), out.size());
  const size_t at = out.rfind('@', end == 0 ? 0 : end - 1);
  if (at != std::string::npos && at >= start) {
    const size_t colon = out.find(':', start);
    if (colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  size_t key = out.find('?');
  while (key != std::string::npos) {
    ++key;
    const size_t amp = std::min(out.find('&', key), out.size());
    const size_t eq = out.find('=', key);
    if (eq < amp && out.compare(key, eq - key, "password") == 0) {
      out.replace(eq + 1, amp - eq - 1, "***");
    }
    key = out.find('&', key);
  }
  return out;
}

int64_t Result::Int(int row, int col) const {
  return std::strtoll(PQgetvalue(r_.get(), row, col), nullptr, 10);
}

std::string Result::Bytes(int row, int col) const {
  const char* p = PQgetvalue(r_.get(), row, col);
  size_t n = static_cast<size_t>(PQgetlength(r_.get(), row, col));
  if (n < 2 || p[0] != '\\' || p[1] != 'x') return std::string(p, n);  // not hex: as is
  std::string out;
  out.reserve((n - 2) / 2);
  for (size_t i = 2; i + 1 < n; i += 2) {
    int hi = HexDigitValue(p[i]), lo = HexDigitValue(p[i + 1]);
    if (hi < 0 || lo < 0) break;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

int64_t Result::Affected() const {
  const char* n = r_ ? PQcmdTuples(r_.get()) : "";
  return *n ? std::strtoll(n, nullptr, 10) : 0;
}

StatusOr<std::unique_ptr<Conn>> Conn::Connect(const std::string& url,
                                              const std::vector<std::string>& setup) {
  // Defaults first: anything the URL says overrides them (expand_dbname, left to right).
  const char* keys[] = {"connect_timeout",
                        "application_name",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        "dbname",
                        nullptr};
  const char* values[] = {"5", "hookbox", "10", "5", "3", url.c_str(), nullptr};
  PGconn* raw = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (!raw) return Status::Unavailable("cannot connect to PostgreSQL", "out of memory");
  std::unique_ptr<Conn> conn(new Conn(raw));
  // Notices ("relation already exists, skipping") would go to stderr, which is hookbox's
  // JSON log.
  PQsetNoticeProcessor(
      raw, [](void*, const char*) {}, nullptr);
  if (PQstatus(raw) != CONNECTION_OK) {
    return Status::Unavailable("cannot connect to PostgreSQL", Trim(PQerrorMessage(raw)));
  }
  for (const std::string& sql : setup) {
    RETURN_IF_ERROR(conn->Run(sql));
  }
  return conn;
}

Conn::~Conn() { PQfinish(conn_); }

Status Conn::Error(const PGresult* r, std::string_view what) {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string code = state ? state : "";
  last_sqlstate_ = code;
  const char* primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string msg = primary ? primary : Trim(PQerrorMessage(conn_));
  if (msg.empty()) msg = "unknown error";
  const std::string about = std::string(what) + ": " + msg;
  // The session is gone, or the failure has no SQLSTATE at all (libpq's own: no result, a lost
  // socket): the connection is not reused.
  if (PQstatus(conn_) != CONNECTION_OK || code.empty() || sqlstate::IsConnectionLost(code)) {
    broken_ = true;
    return Status::Unavailable("storage unavailable", about);
  }
  // Contention is quiet in the storage log and counter (ops/storage_health.h).
  if (sqlstate::IsContention(code)) {
    return Status::Unavailable(Status::UnavailableKind::kBusy, "storage busy", about);
  }
  if (sqlstate::IsServerUnavailable(code)) return Status::Unavailable("storage unavailable", about);
  if (sqlstate::IsUnstorableText(code)) {
    return Status::InvalidArgument("event fields are not valid text for the database", about);
  }
  return Status::Internal("storage error", about + " (SQLSTATE " + code + ")");
}

StatusOr<std::string> Conn::PreparedName(const std::string& sql, bool text_params, int n_params) {
  auto it = prepared_.find(sql);
  if (it != prepared_.end()) return it->second;
  std::string name = "hb" + std::to_string(prepared_.size() + 1);
  std::vector<Oid> types(text_params ? static_cast<size_t>(n_params) : 0, kTextOid);
  PGresult* r = PQprepare(conn_, name.c_str(), sql.c_str(), static_cast<int>(types.size()),
                          types.empty() ? nullptr : types.data());
  if (PQresultStatus(r) != PGRES_COMMAND_OK) {
    Status s = Error(r, "prepare");
    PQclear(r);
    return s;
  }
  PQclear(r);
  prepared_.emplace(sql, name);
  return name;
}

Status Conn::Prepare(const std::string& sql, bool text_params, int n_params) {
  auto name = PreparedName(sql, text_params, n_params);
  return name.ok() ? Status::Ok() : name.status();
}

StatusOr<Result> Conn::Exec(const std::string& sql, const Params& p, bool text_params) {
  ASSIGN_OR_RETURN(const std::string name,
                   PreparedName(sql, text_params, static_cast<int>(p.size())));
  const size_t n = p.size();
  std::vector<const char*> values(n);
  std::vector<int> lengths(n), formats(n);
  for (size_t i = 0; i < n; ++i) {
    values[i] = p.null_[i] ? nullptr : p.values_[i].c_str();
    lengths[i] = static_cast<int>(p.values_[i].size());
    formats[i] = p.binary_[i] ? 1 : 0;
  }
  PGresult* r = PQexecPrepared(conn_, name.c_str(), static_cast<int>(n), values.data(),
                               lengths.data(), formats.data(), 0);
  ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Result(r);
  Status s = Error(r, "exec");
  PQclear(r);
  return s;
}

Status Conn::Run(const std::string& sql) {
  PGresult* r = PQexec(conn_, sql.c_str());
  ExecStatusType st = PQresultStatus(r);
  Status s = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? Status::Ok() : Error(r, "run");
  PQclear(r);
  return s;
}

bool Conn::ClosedByServer() {
  // An idle connection has nothing to read; anything readable is the server closing it
  // (EOF, or the FATAL notice a shutdown sends first). Dropping a healthy one by mistake
  // only costs a reconnect.
  pollfd p{PQsocket(conn_), POLLIN, 0};
  if (p.fd < 0) return true;
  if (poll(&p, 1, 0) == 0) return false;
  broken_ = true;
  return true;
}

Pool::~Pool() = default;

StatusOr<Pool::Handle> Pool::Acquire() { return Take(true); }
StatusOr<Pool::Handle> Pool::TryAcquire() { return Take(false); }

StatusOr<Pool::Handle> Pool::Take(bool wait) {
  std::unique_lock lock(mu_);
  for (;;) {
    while (!idle_.empty()) {
      std::unique_ptr<Conn> c = std::move(idle_.back());
      idle_.pop_back();
      if (c->broken() || c->ClosedByServer()) {
        --open_;
        continue;  // c closes here
      }
      return Handle(this, std::move(c));
    }
    if (open_ < size_) break;
    if (!wait) return Status::Unavailable("storage unavailable", "every connection is busy");
    if (!cv_.wait_for(lock, std::chrono::seconds(10),
                      [&] { return !idle_.empty() || open_ < size_; })) {
      return Status::Unavailable("storage unavailable", "every database connection is busy");
    }
  }
  const auto now = std::chrono::steady_clock::now();
  if (now < retry_at_) return last_error_;               // reconnect backoff: fail fast
  if (backoff_.count() > 0) retry_at_ = now + backoff_;  // one probe per backoff window
  ++open_;
  lock.unlock();
  auto conn = Conn::Connect(url_, setup_);
  lock.lock();
  if (!conn.ok()) {
    --open_;
    backoff_ = std::min<std::chrono::milliseconds>(
        backoff_.count() == 0 ? std::chrono::milliseconds(100) : backoff_ * 2,
        std::chrono::seconds(2));
    retry_at_ = std::chrono::steady_clock::now() + backoff_;
    last_error_ = Status::Unavailable("storage unavailable", conn.status().ToString());
    cv_.notify_one();
    return last_error_;
  }
  backoff_ = std::chrono::milliseconds(0);
  retry_at_ = {};
  return Handle(this, std::move(*conn));
}

void Pool::Release(std::unique_ptr<Conn> conn) {
  // A connection given back inside a transaction (an early return) is rolled back first.
  if (!conn->broken() && !conn->idle()) (void)conn->Run("ROLLBACK");
  std::unique_ptr<Conn> drop;
  {
    std::lock_guard lock(mu_);
    if (conn->broken() || !conn->idle()) {
      drop = std::move(conn);
      --open_;
    } else {
      idle_.push_back(std::move(conn));
    }
  }
  cv_.notify_one();
}

}  // namespace hookbox::pg
