// Test helpers for the PostgreSQL backend: the throwaway cluster that ctest starts
// (tests/pg/cluster.sh; its STATE file names the socket directory), a fresh database per
// test, queries as an operator would run them with psql, and stopping / starting the
// server under a running hookbox. A test that stops the server starts a cluster of its own
// (OwnCluster), and a failover test a primary and a synchronous standby of its own
// (FailoverPair), with the same script, leaving the shared cluster alone: ctest runs the
// other PostgreSQL tests on it at the same time.
//
// The cluster's STATE file comes from $HOOKBOX_TEST_PG_STATE, else HOOKBOX_PG_STATE (set by
// CMakeLists.txt to the build tree's file).
#pragma once

#include <libpq-fe.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace hookbox::pgtest {

// The shared cluster's STATE file.
inline std::string StatePath() {
  const char* env = std::getenv("HOOKBOX_TEST_PG_STATE");
  return env && *env ? env : HOOKBOX_PG_STATE;
}

// The value of KEY='...' in a cluster's STATE file (the shared cluster's by default).
inline std::string StateValue(const std::string& key, const std::string& path = StatePath()) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no PostgreSQL test cluster (" + path + "): ctest starts one");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + "='", 0) == 0 && line.size() > key.size() + 3) {
      return line.substr(key.size() + 2, line.size() - key.size() - 3);
    }
  }
  throw std::runtime_error("no " + key + " in " + path);
}

// The URL of database `db` on the shared test cluster, or on the cluster of `state`.
inline std::string UrlFor(const std::string& db, const std::string& state = StatePath()) {
  return "postgresql:///" + db + "?host=" + StateValue("PG_DIR", state) + "&user=postgres";
}

// A query's rows as psql -At prints them: columns joined by '|', one line per row.
inline std::string Query(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string err = PQerrorMessage(c);
    PQfinish(c);
    throw std::runtime_error("cannot connect to the test cluster: " + err);
  }
  PGresult* r = PQexec(c, sql.c_str());
  std::string out;
  if (PQresultStatus(r) == PGRES_TUPLES_OK) {
    for (int i = 0; i < PQntuples(r); ++i) {
      for (int j = 0; j < PQnfields(r); ++j) {
        if (j) out += '|';
        out += PQgetvalue(r, i, j);
      }
      out += '\n';
    }
  } else if (PQresultStatus(r) != PGRES_COMMAND_OK) {
    out = std::string("ERROR: ") + PQresultErrorMessage(r);
  }
  PQclear(r);
  PQfinish(c);
  return out;
}

// The first column of the first row as a number; -1 when there is none.
inline int64_t Count(const std::string& url, const std::string& sql) {
  std::string out = Query(url, sql);
  if (out.empty() || out.rfind("ERROR", 0) == 0) return -1;
  return std::strtoll(out.c_str(), nullptr, 10);
}

// A new, empty database on the shared test cluster (or on the cluster of `state`), dropped
// when this goes out of scope.
class TestDatabase {
 public:
  explicit TestDatabase(std::string state = StatePath()) : state_(std::move(state)) {
    static std::atomic<int> counter{0};
    name_ = "hookbox_test_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
    std::string r = pgtest::Query(UrlFor("postgres", state_), "CREATE DATABASE " + name_);
    if (!r.empty()) throw std::runtime_error("CREATE DATABASE failed: " + r);
  }
  ~TestDatabase() {
    try {
      pgtest::Query(UrlFor("postgres", state_),
                    "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (...) {
      // The cluster is gone: nothing left to drop.
    }
  }
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  std::string url() const { return UrlFor(name_, state_); }
  const std::string& name() const { return name_; }
  std::string Query(const std::string& sql) const { return pgtest::Query(url(), sql); }
  int64_t Count(const std::string& sql) const { return pgtest::Count(url(), sql); }

 private:
  std::string state_, name_;
};

// Runs tests/pg/cluster.sh VERB STATE (server-stop, server-start, ...) on the shared
// cluster, or on the cluster of `state`; true when it succeeded.
inline bool ClusterCommand(const std::string& verb, const std::string& state = StatePath()) {
  const std::string cmd = std::string(HOOKBOX_PG_CLUSTER) + " " + verb + " '" + state + "'";
  int rc = std::system(cmd.c_str());
  return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

// A cluster of the test's own (cluster.sh start into a temporary directory), for a test that
// stops or restarts the server; stopped and removed when this goes out of scope.
class OwnCluster {
 public:
  OwnCluster() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-own-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    state_ = dir_ + "/cluster.env";
    if (!ClusterCommand("start", state_)) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      throw std::runtime_error("cluster.sh start failed");
    }
  }
  ~OwnCluster() {
    if (std::filesystem::exists(state_)) ClusterCommand("stop", state_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  OwnCluster(const OwnCluster&) = delete;
  OwnCluster& operator=(const OwnCluster&) = delete;

  const std::string& state() const { return state_; }

 private:
  std::string dir_, state_;
};

// A primary and a synchronous standby of its own (cluster.sh start, then standby): every
// commit the primary acknowledges is flushed on the standby too. Both are stopped and their
// directories removed when this goes out of scope, whatever the test did to them. The
// database `db` is created on the primary (and so on the standby).
class FailoverPair {
 public:
  explicit FailoverPair(const std::string& db) : db_(db) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-pair-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    primary_state_ = dir_ + "/primary.env";
    standby_state_ = dir_ + "/standby.env";
    if (!ClusterCommand("start", primary_state_)) Fail("cluster.sh start failed");
    if (!Run("standby '" + primary_state_ + "' '" + standby_state_ + "'")) {
      Fail("cluster.sh standby failed");
    }
    primary_dir_ = StateValue("PG_DIR", primary_state_);
    standby_dir_ = StateValue("PG_DIR", standby_state_);
    const std::string r = pgtest::Query(PrimaryUrl("postgres"), "CREATE DATABASE " + db_);
    if (!r.empty()) Fail("CREATE DATABASE failed: " + r);
  }
  ~FailoverPair() { Cleanup(); }
  FailoverPair(const FailoverPair&) = delete;
  FailoverPair& operator=(const FailoverPair&) = delete;

  // What hookbox is given: both sockets, and libpq connects to whichever takes writes.
  std::string Url() const {
    return "postgresql:///" + db_ + "?host=" + primary_dir_ + "," + standby_dir_ +
           "&target_session_attrs=read-write&user=postgres";
  }
  std::string PrimaryUrl(const std::string& db = "") const { return UrlOn(primary_dir_, db); }
  std::string StandbyUrl(const std::string& db = "") const { return UrlOn(standby_dir_, db); }

  // The primary lost: immediate shutdown, clients cut off mid-statement.
  bool KillPrimary() const { return ClusterCommand("server-kill", primary_state_); }
  // The standby ends its recovery and takes writes.
  bool PromoteStandby() const { return ClusterCommand("promote", standby_state_); }

 private:
  static bool Run(const std::string& args) {
    const std::string cmd = std::string(HOOKBOX_PG_CLUSTER) + " " + args;
    int rc = std::system(cmd.c_str());
    return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
  }
  std::string UrlOn(const std::string& socket_dir, const std::string& db) const {
    return "postgresql:///" + (db.empty() ? db_ : db) + "?host=" + socket_dir + "&user=postgres";
  }
  [[noreturn]] void Fail(const std::string& what) {
    Cleanup();
    throw std::runtime_error(what);
  }
  void Cleanup() {
    // `stop` tolerates a server already down; each removes its directory and STATE.
    for (const std::string* state : {&standby_state_, &primary_state_}) {
      if (std::filesystem::exists(*state)) ClusterCommand("stop", *state);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string db_, dir_, primary_state_, standby_state_, primary_dir_, standby_dir_;
};

}  // namespace hookbox::pgtest
