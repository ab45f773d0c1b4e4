// What an `exec` handler can reach of the daemon, and what it leaves behind, with the real daemon:
//   - running as the daemon's own user (both as `nobody`, through setpriv), a handler reads
//     neither /proc/$PPID/environ (which holds an env: secret) nor /proc/$PPID/fd, and it
//     starts in / rather than in the daemon's working directory;
//   - a handler that starts processes outside its process group (setsid, a double fork) and
//     in it (a plain `&`) leaves none of them running once its attempt ends: by exit 0, by
//     a timeout (each retry's too), or by the daemon's shutdown past shutdown_grace;
//   - a handler that tries to move itself into the daemon's process group (issue 41) is
//     killed at its timeout, other handlers run meanwhile, and SIGTERM still ends the
//     daemon past shutdown_grace.
// The handler's descendants write their pids into files before it goes on, so the test
// knows every one; "running" is read from /proc (a zombie is not running).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <thread>

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

// The hostile handler of issue 41: it tries to move into its parent's process group (the
// daemon's), ignoring the refusal, writes "<pid> <ppid>" to <argv[1]>/<event>.<attempt>,
// then sleeps for five minutes.
constexpr const char* kHostile = R"py(import os, sys, time
try:
    os.setpgid(0, os.getpgid(os.getppid()))
except OSError:
    pass
name = os.path.join(sys.argv[1], os.environ["HOOKBOX_EVENT_ID"] + "." + os.environ["HOOKBOX_ATTEMPT"])
with open(name + ".tmp", "w") as f:
    f.write("%d %d" % (os.getpid(), os.getppid()))
os.rename(name + ".tmp", name)
time.sleep(300)
)py";

// Endpoint `hostile` runs kHostile with a 2 s timeout; endpoint `fast` appends the event id
// to <dir>/marker.
std::string HostileConfig(const TempDir& dir, const std::string& grace, const std::string& retry) {
  WriteFile(dir / "hostile.py", kHostile);
  std::filesystem::create_directory(dir / "hostile");
  return "listen: 127.0.0.1:0\nadmin_listen: \"\"\ndatabase: {DB}\nworkers: 2\n"
         "shutdown_grace: " +
         grace +
         "\n"
         "endpoints:\n"
         "  - name: hostile\n"
         "    path: /hooks/hostile\n"
         "    verify: none\n"
         "    event_id: body:/id\n"
         "    retry: " +
         retry +
         "\n"
         "    routes:\n"
         "      - events: [\"*\"]\n"
         "        handlers:\n"
         "          - exec: {command: [/usr/bin/python3, \"{DIR}/hostile.py\", \"{DIR}/hostile\"],"
         " timeout: 2s}\n"
         "  - name: fast\n"
         "    path: /hooks/fast\n"
         "    verify: none\n"
         "    event_id: body:/id\n"
         "    routes:\n"
         "      - events: [\"*\"]\n"
         "        handlers:\n"
         "          - exec: {command: [/bin/sh, -c, 'echo \"$HOOKBOX_EVENT_ID\" >> \"$0\"',"
         " \"{DIR}/marker\"]}\n";
}

struct Hostile {
  pid_t pid = 0;     // the handler's process
  pid_t parent = 0;  // the daemon
};

// What the hostile handler of `event`'s `attempt` wrote; zeros if it has not within `bound`.
Hostile WaitForHostile(const TempDir& dir, const std::string& event, int attempt,
                       std::chrono::milliseconds bound = std::chrono::seconds(20)) {
  Hostile h;
  const std::string path = dir / ("hostile/" + event + "." + std::to_string(attempt));
  Eventually([&] { return !ReadFile(path).empty(); }, bound);
  std::istringstream(ReadFile(path)) >> h.pid >> h.parent;
  return h;
}

bool Marked(const TempDir& dir, const std::string& event) {
  for (const std::string& line : ReadLines(dir / "marker")) {
    if (line == event) return true;
  }
  return false;
}

json Show(const Daemon& d, const std::string& endpoint, const std::string& id) {
  auto r = d.Cli({"inbox", "show", endpoint, id, "--json"});
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
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

TEST_CASE(
    "exec isolation: a handler that moves into the daemon's process group is killed at its "
    "timeout, and other handlers run meanwhile") {
  TempDir dir;
  Daemon d(dir, HostileConfig(dir, "30s", "{max_attempts: 1}"));
  auto r = d.Post("/hooks/hostile", {}, R"({"id":"h1"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const Hostile h = WaitForHostile(dir, "h1", 1);
  REQUIRE(h.pid > 0);

  // While it sleeps, within its timeout: another endpoint's event is run.
  r = d.Post("/hooks/fast", {}, R"({"id":"f1"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(Eventually([&] { return Marked(dir, "f1"); }));
  CHECK(Running(h.pid));  // the hostile attempt had not ended yet

  // Its timeout ends its attempt, recorded as a timeout once its process no longer runs.
  json row;
  const bool ended = Eventually([&] {
    row = Show(d, "hostile", "h1");
    return row["status"] == "dead";
  });
  CHECK(ended);
  if (ended) {
    REQUIRE(row["jobs"].size() == 1);
    REQUIRE(row["jobs"][0]["attempts"].size() == 1);
    CHECK(row["jobs"][0]["attempts"][0]["outcome"] == "timeout");
  }
  CHECK_FALSE(Running(h.pid));

  // Past the hostile attempt's deadline, handlers still start.
  r = d.Post("/hooks/fast", {}, R"({"id":"f2"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(Eventually([&] { return Marked(dir, "f2"); }));

  if (Running(h.pid)) ::kill(h.pid, SIGKILL);  // a failing run ends here, not in 5 minutes
  CHECK(d.Kill(SIGTERM) == 0);
}

TEST_CASE(
    "exec isolation: SIGTERM while a handler that moved into the daemon's group runs ends the "
    "daemon past shutdown_grace") {
  TempDir dir;
  // Its first attempt times out; SIGTERM comes during the second.
  Daemon d(dir, HostileConfig(dir, "300ms", "{max_attempts: 2, base: 10ms, max: 10ms}"));
  auto r = d.Post("/hooks/hostile", {}, R"({"id":"h1"})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const Hostile first = WaitForHostile(dir, "h1", 1);
  REQUIRE(first.pid > 0);
  const Hostile second = WaitForHostile(dir, "h1", 2);
  CHECK(second.pid > 0);

  // A watchdog SIGKILLs the daemon (still our unreaped child, so its pid is its own) if it
  // has not exited 60 s after SIGTERM: a failing run ends, and says so.
  std::atomic<bool> exited{false}, fired{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 6000 && !exited; ++i) std::this_thread::sleep_for(10ms);
    if (!exited) {
      fired = true;
      ::kill(first.parent, SIGKILL);
    }
  });
  const int code = d.Kill(SIGTERM);
  exited = true;
  watchdog.join();
  CHECK_FALSE(fired);
  CHECK(code == 0);
  CHECK(d.Log().find("stopped with attempts still running") != std::string::npos);
  CHECK_FALSE(Running(first.pid));
  if (second.pid > 0) CHECK_FALSE(Running(second.pid));
}
