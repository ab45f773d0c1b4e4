// Two `hookbox serve` processes (replicas) on one database of a throwaway PostgreSQL
// cluster, and the config they share, for the PostgreSQL end-to-end tests
// (postgres_test.cc, postgres_restart_test.cc): real HTTP, real handler processes, side
// effects counted (lines an exec handler appends, rows a sql handler inserts).
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

#include "tests/integration/daemon.h"
#include "tests/pg/pg_testing.h"

namespace hookbox::pgtest {

using testing::Daemon;
using testing::TempDir;

// A config for one replica: {DB} is the shared database, {SHARED} a directory both
// replicas' handlers write to, {WORKERS} the worker count; `endpoints` is YAML.
inline std::string ReplicaConfig(const TempDir& shared, int workers, const std::string& endpoints) {
  std::string yaml = R"(
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
database: "{DB}"
workers: )" + std::to_string(workers) +
                     "\nendpoints:\n" + endpoints;
  for (auto at = yaml.find("{SHARED}"); at != std::string::npos; at = yaml.find("{SHARED}")) {
    yaml.replace(at, 8, shared.path().string());
  }
  return yaml;
}

// Two replicas on a database of the shared cluster, or of the cluster of `state`.
struct Replicas {
  Replicas(const std::string& endpoints, int workers = 4,
           const std::string& state = hookbox::pgtest::StatePath())
      : db(state),
        a(a_dir, ReplicaConfig(shared, workers, endpoints), db.url()),
        b(b_dir, ReplicaConfig(shared, workers, endpoints), db.url()) {}
  Daemon& operator[](int i) { return i % 2 ? b : a; }
  int64_t Count(const std::string& sql) const { return db.Count(sql); }

  TempDir shared, a_dir, b_dir;
  TestDatabase db;
  Daemon a, b;
};

// An exec handler that appends "<event id> <hookbox pid>" to {SHARED}/<file> ($PPID: the
// replica that ran it).
inline std::string Recorder(const std::string& file, const std::string& then = "") {
  return R"([/bin/sh, -c, 'echo "$HOOKBOX_EVENT_ID $PPID" >> {SHARED}/)" + file + "; " + then +
         "']";
}

// One endpoint at /hooks/<name>: no verification, the id at body:/id, `extra` endpoint keys
// (YAML, indented by 4), every event type routed to `handlers` (list items, indented by 10).
inline std::string Endpoint(const std::string& name, const std::string& handlers,
                            const std::string& extra = "") {
  return "  - name: " + name + "\n    path: /hooks/" + name +
         "\n    verify: none\n    event_id: body:/id\n" + extra +
         "    routes:\n      - events: [\"*\"]\n        handlers:\n" + handlers;
}

// concurrency 0: the kind's default.
inline std::string Exec(const std::string& command, const std::string& timeout = "10s",
                        int concurrency = 0) {
  return "          - exec: {command: " + command + ", timeout: " + timeout +
         (concurrency > 0 ? ", concurrency: " + std::to_string(concurrency) : "") + "}\n";
}

// A sql handler with one setup and one per-event statement (each in double quotes).
inline std::string Sql(const std::string& setup, const std::string& statement) {
  return "          - sql:\n              setup: [\"" + setup +
         "\"]\n              statements: [\"" + statement + "\"]\n";
}

inline int ReadyStatus(const Daemon& d) {
  httplib::Client admin("127.0.0.1", d.admin_port());
  admin.set_read_timeout(std::chrono::seconds(5));
  auto r = admin.Get("/readyz");
  return r ? r->status : 0;
}

}  // namespace hookbox::pgtest
