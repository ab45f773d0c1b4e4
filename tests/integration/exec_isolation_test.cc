// What an `exec` handler can reach of the daemon, and what it leaves behind, with the real daemon:
//   - running as the daemon's own user (both as `nobody`, through setpriv), a handler reads
//     neither /proc/$PPID/environ (which holds an env: secret) nor /proc/$PPID/fd, and it
//     starts in / rather than in the daemon's working directory;
//   - a handler that starts processes outside its process group (setsid, a double fork) and
//     in it (a plain `&`) leaves none of them running once its attempt ends: by exit 0, by
//     a timeout (each retry's too), or by the daemon's shutdown past shutdown_grace.
// The handler's descendants write their pids into files before it goes on, so the test
// knows every one; "running" is read from /proc (a zombie is not running).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <set>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::DaemonOptions;
using hookbox::testing::Eventually;
using hookbox::testing::ReadFile;
using hookbox::testing::ReadLines;
using hookbox::testing::TempDir;
using hookbox::testing::WriteFile;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// Starts three descendants that each write their pid to <dir>/pids/<event>.<attempt>.<n>:
// one in a session of its own (setsid), one double-forked into another session (its parent,
// a subshell, exits at once), and one in the handler's own group; waits until all three
// have written, then does what $1 says: exit 0, or sleep (until the timeout or shutdown).
constexpr const char* kHandler = R"(#!/bin/sh
dir=$(dirname "$0")/pids
base="$dir/$HOOKBOX_EVENT_ID.$HOOKBOX_ATTEMPT"
setsid sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 300' "$base.1" &
( setsid sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 300' "$base.2" & )
sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 300' "$base.3" &
while [ ! -s "$base.1" ] || [ ! -s "$base.2" ] || [ ! -s "$base.3" ]; do sleep 0.01; done
case "$1" in
  exit0) exit 0 ;;
  *) exec sleep 300 ;;
esac
)";

// True while `pid` runs: /proc has it and it is not a zombie.
bool Running(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  const char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

// The pids the handler's descendants wrote so far.
std::vector<pid_t> Descendants(const TempDir& dir) {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "pids")) {
    if (entry.path().extension() == ".tmp") continue;
    const std::string text = ReadFile(entry.path().string());
    if (!text.empty()) pids.push_back(std::stoi(text));
  }
  return pids;
}

// The descendants still running; SIGKILLs them, so that a failing test leaves nothing.
std::vector<pid_t> Survivors(const TempDir& dir) {
  std::vector<pid_t> alive;
  for (pid_t pid : Descendants(dir)) {
    if (Running(pid)) alive.push_back(pid);
  }
  for (pid_t pid : alive) ::kill(pid, SIGKILL);
  return alive;
}

// An endpoint `open` whose one handler is kHandler with `mode`, with these extra settings.
std::string TreeConfig(const TempDir& dir, const std::string& mode, const std::string& timeout,
                       const std::string& top = "",
                       const std::string& retry = "{max_attempts: 1}") {
  WriteFile(dir / "handler.sh", kHandler);
  ::chmod((dir / "handler.sh").c_str(), 0755);
  std::filesystem::create_directory(dir / "pids");
  return "listen: 127.0.0.1:0\nadmin_listen: \"\"\ndatabase: {DB}\nworkers: 1\n" + top +
         "endpoints:\n"
         "  - name: open\n"
         "    path: /hooks/open\n"
         "    verify: none\n"
         "    event_id: body:/id\n"
         "    retry: " +
         retry +
         "\n"
         "    routes:\n"
         "      - events: [\"*\"]\n"
         "        handlers:\n"
         "          - exec: {command: [\"{DIR}/handler.sh\", \"" +
         mode + "\"], timeout: " + timeout + "}\n";
}

// The job's status once the inbox row has one of `statuses`; "" if it never gets there.
std::string WaitForRow(const Daemon& d, const std::set<std::string>& statuses) {
  std::string seen;
  Eventually([&] {
    json rows = d.Rows();
    if (rows.size() != 1) return false;
    seen = rows[0]["status"];
    return statuses.count(seen) == 1;
  });
  return seen;
}

}  // namespace

TEST_CASE("exec isolation: exit 0 leaves nothing of the attempt running") {
  TempDir dir;
  Daemon d(dir, TreeConfig(dir, "exit0", "30s"));
  auto r = d.Post("/hooks/open", {}, R"({"id":"e1"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  // Recorded once the attempt is over, and an attempt is over once its tree is gone.
  CHECK(WaitForRow(d, {"processed", "dead"}) == "processed");
  CHECK(Descendants(dir).size() == 3);
  CHECK(Survivors(dir).empty());
  CHECK(d.Kill(SIGTERM) == 0);
}

TEST_CASE("exec isolation: a timeout leaves nothing of any attempt running, retries included") {
  TempDir dir;
  Daemon d(dir, TreeConfig(dir, "sleep", "1s", "", "{max_attempts: 2, base: 10ms, max: 10ms}"));
  auto r = d.Post("/hooks/open", {}, R"({"id":"t1"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(WaitForRow(d, {"processed", "dead"}) == "dead");
  CHECK(Descendants(dir).size() == 6);  // three per attempt
  CHECK(Survivors(dir).empty());
  CHECK(d.Kill(SIGTERM) == 0);
}

TEST_CASE("exec isolation: a shutdown past shutdown_grace leaves nothing of the attempt running") {
  TempDir dir;
  Daemon d(dir, TreeConfig(dir, "sleep", "120s", "shutdown_grace: 300ms\n"));
  auto r = d.Post("/hooks/open", {}, R"({"id":"s1"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  REQUIRE(Eventually([&] { return Descendants(dir).size() == 3; }));
  CHECK(d.Kill(SIGTERM) == 0);
  CHECK(d.Log().find("stopped with attempts still running") != std::string::npos);
  CHECK(Survivors(dir).empty());
}

TEST_CASE(
    "exec isolation: a handler of the daemon's user reads neither its environment nor "
    "its descriptors, and starts in /") {
  if (::geteuid() != 0 || ::access("/usr/bin/setpriv", X_OK) != 0) {
    WARN("needs root and setpriv to run the daemon and its handler as nobody: not run");
    return;
  }
  TempDir dir;
  // nobody must reach the directory (the config, the inbox, the handler, its report).
  ::chmod(dir.path().c_str(), 0777);
  WriteFile(dir / "probe.sh", R"(#!/bin/sh
out=$(dirname "$0")/seen
{
  if tr '\0' '\n' < /proc/$PPID/environ | grep -q GH_SECRET; then echo environ-read; else echo environ-denied; fi
  if ls /proc/$PPID/fd > /dev/null 2>&1; then echo fd-read; else echo fd-denied; fi
  pwd
} > "$out.tmp" 2>/dev/null
mv "$out.tmp" "$out"
)");
  ::chmod((dir / "probe.sh").c_str(), 0755);
  DaemonOptions options;
  options.env = {"GH_SECRET=it-is-a-secret-of-the-daemon"};
  options.wrapper = {"/usr/bin/setpriv", "--reuid=nobody",  "--regid=nogroup",
                     "--clear-groups",   "--inh-caps=-all", "--"};
  Daemon d(dir, R"(listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
workers: 1
endpoints:
  - name: gh
    path: /hooks/github
    provider: github
    secrets: [{env: GH_SECRET}]
    routes:
      - events: ["push"]
        handlers: [{exec: {command: ["{DIR}/probe.sh"]}}]
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers: [{exec: {command: ["{DIR}/probe.sh"]}}]
)",
           options);
  auto r = d.Post("/hooks/open", {}, R"({"id":"p1"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  REQUIRE(Eventually([&] { return !ReadFile(dir / "seen").empty(); }));
  const std::vector<std::string> seen = ReadLines(dir / "seen");
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == "environ-denied");
  CHECK(seen[1] == "fd-denied");
  CHECK(seen[2] == "/");
  CHECK(d.Kill(SIGTERM) == 0);
}
