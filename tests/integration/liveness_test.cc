// Lease liveness across PID namespaces (issue 41, finding 4): two real `hookbox serve`
// replicas on one PostgreSQL database of the throwaway cluster, with one host name, the
// second started inside a PID namespace of its own (`unshare --pid --fork --mount-proc`), as
// replicas in containers are. Neither can see the other's processes, so a replica that
// judged another's leases by `kill(pid, 0)` found the other "gone" and released its live
// leases: a job ran twice at once and its first run was recorded `abandoned`. A lease's owner
// is now an instance with a heartbeat in the database (DESIGN.md, "Lease liveness"), which
// every replica sees alike. Tagged [.postgres]: run by `integration_postgres`.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "daemon.h"
#include "tests/pg/pg_testing.h"

using hookbox::pgtest::TestDatabase;
using hookbox::testing::AnswerLine;
using hookbox::testing::Daemon;
using hookbox::testing::DaemonOptions;
using hookbox::testing::Eventually;
using hookbox::testing::ReadLines;
using hookbox::testing::TempDir;
using namespace std::chrono_literals;

namespace {

// What `unshare` needs (CAP_SYS_ADMIN for a PID namespace: root, outside a container that
// forbids it), tried once; "" when it works, else why not.
std::string PidNamespaceProblem() {
  if (geteuid() != 0) return "a PID namespace (unshare --pid) needs root";
  const int rc = std::system("/usr/bin/unshare --pid --fork --mount-proc /bin/true 2>/dev/null");
  if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
    return "unshare --pid --fork --mount-proc fails here (no CAP_SYS_ADMIN?)";
  }
  return "";
}

// One replica's config: an exec handler that appends "<event id> <attempt>" to {SHARED}/runs,
// then runs for 6 s: longer than the heartbeat timeout (3 s), so the second replica's sweeps
// see the first's instance many times while the job runs.
std::string Config(const TempDir& shared) {
  return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: "{DB}"
workers: 2
heartbeat_timeout: 3s
endpoints:
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - exec: {command: [/bin/sh, -c, 'echo "$HOOKBOX_EVENT_ID $HOOKBOX_ATTEMPT" >> )" +
         shared.path().string() + R"(/runs; sleep 6'], timeout: 30s}
)";
}

}  // namespace

TEST_CASE("replicas in separate PID namespaces, one host name: a running job is never taken over",
          "[.postgres]") {
  if (const std::string problem = PidNamespaceProblem(); !problem.empty()) {
    WARN("skipped: " << problem);
    return;
  }
  TempDir shared, a_dir, b_dir;
  TestDatabase db;
  Daemon a(a_dir, Config(shared), db.url());
  CHECK(AnswerLine(a.Post("/hooks/open", {}, R"({"id":"long-1"})")) == "200 accepted");
  REQUIRE(Eventually([&] { return ReadLines(shared / "runs").size() == 1; }));

  // B: the same config and host name, its own PID namespace (pid 1 there; A's pid names no
  // process it can see). --kill-child: B dies with the unshare process the harness kills.
  DaemonOptions in_namespace;
  in_namespace.wrapper = {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"};
  Daemon b(b_dir, Config(shared), in_namespace, db.url());

  // A's job runs to its end and is recorded once; B neither released its lease nor ran it.
  REQUIRE(Eventually(
      [&] { return db.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 1; }, 40s));
  CHECK(ReadLines(shared / "runs") == std::vector<std::string>{"long-1 1"});
  CHECK(db.Count("SELECT count(*) FROM attempts") == 1);
  CHECK(db.Count("SELECT count(*) FROM attempts WHERE outcome = 'ok'") == 1);
  CHECK(db.Count("SELECT count(*) FROM attempts WHERE detail LIKE 'abandoned%'") == 0);
  CHECK(b.LogCount("released the leases of a process that is gone") == 0);
  CHECK(b.LogCount("released the leases of instances whose heartbeat expired") == 0);
  CHECK(a.Log().find("\"discarded\"") == std::string::npos);  // A's result was recorded
}
