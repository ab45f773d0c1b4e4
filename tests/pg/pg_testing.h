// Test helpers for the PostgreSQL backend: the throwaway cluster that ctest starts
// (tests/pg/cluster.sh; its STATE file names the socket directory), a fresh database per
// test, queries as an operator would run them with psql, and stopping / starting the
// server under a running hookbox.
//
// The cluster's STATE file comes from $HOOKBOX_TEST_PG_STATE, else HOOKBOX_PG_STATE (set by
// CMakeLists.txt to the build tree's file).
#pragma once

#include <libpq-fe.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace hookbox::pgtest {

// The value of KEY='...' in the cluster's STATE file.
inline std::string StateValue(const std::string& key) {
  const char* env = std::getenv("HOOKBOX_TEST_PG_STATE");
  const std::string path = env && *env ? env : HOOKBOX_PG_STATE;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no PostgreSQL test cluster (" + path + "): ctest starts one");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + "='", 0) == 0 && line.size() > key.size() + 3) {
      return line.substr(key.size() + 2, line.size() - key.size() - 3);
    }
  }
  throw std::runtime_error("no " + key + " in " + path);
}

// The URL of database `db` on the test cluster.
inline std::string UrlFor(const std::string& db) {
  return "postgresql:///" + db + "?host=" + StateValue("PG_DIR") + "&user=postgres";
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

// A new, empty database on the test cluster, dropped when this goes out of scope.
class TestDatabase {
 public:
  TestDatabase() {
    static std::atomic<int> counter{0};
    name_ = "hookbox_test_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
    std::string r = pgtest::Query(UrlFor("postgres"), "CREATE DATABASE " + name_);
    if (!r.empty()) throw std::runtime_error("CREATE DATABASE failed: " + r);
  }
  ~TestDatabase() {
    try {
      pgtest::Query(UrlFor("postgres"), "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (...) {
      // The cluster is gone: nothing left to drop.
    }
  }
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  std::string url() const { return UrlFor(name_); }
  const std::string& name() const { return name_; }
  std::string Query(const std::string& sql) const { return pgtest::Query(url(), sql); }
  int64_t Count(const std::string& sql) const { return pgtest::Count(url(), sql); }

 private:
  std::string name_;
};

// Runs tests/pg/cluster.sh VERB STATE (server-stop, server-start); true when it succeeded.
inline bool ClusterCommand(const std::string& verb) {
  const char* env = std::getenv("HOOKBOX_TEST_PG_STATE");
  const std::string state = env && *env ? env : HOOKBOX_PG_STATE;
  const std::string cmd = std::string(HOOKBOX_PG_CLUSTER) + " " + verb + " '" + state + "'";
  int rc = std::system(cmd.c_str());
  return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

}  // namespace hookbox::pgtest
