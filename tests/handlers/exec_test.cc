// Tests for handlers/exec: real child processes, real pipes, real process groups, and a
// hostile child that tries to leave its group.
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <regex>
#include <thread>

#include "tests/handlers/testing.h"

namespace hookbox {
namespace {

using testing::Build;
using testing::Event;
using testing::Quoted;
using testing::ReadAll;
using testing::TempDir;

// `command` as a YAML flow list of quoted items.
std::string Command(const std::vector<std::string>& argv, const std::string& more = "") {
  std::string yaml = "{command: [";
  for (size_t i = 0; i < argv.size(); ++i) yaml += (i ? ", " : "") + Quoted(argv[i]);
  return yaml + "]" + (more.empty() ? "" : ", " + more) + "}";
}

HandlerResult RunCommand(const std::vector<std::string>& argv, const HandlerEvent& event = Event(),
                         const std::string& more = "") {
  auto built = Build("exec", Command(argv, more));
  INFO(built.Errors());
  REQUIRE(built.handler != nullptr);
  return built.handler->Run(event);
}

// Processes of group `pgid` that can still run (zombies cannot), from /proc.
std::vector<int> LiveMembers(int pgid) {
  std::vector<int> live;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = ReadAll(entry.path() / "stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (sscanf(stat.c_str() + paren + 1, " %c %d %d", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') live.push_back(std::stoi(name));
  }
  return live;
}

// SIGKILL lands asynchronously: give the killed group a moment to disappear.
bool GroupGone(int pgid) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!LiveMembers(pgid).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

TEST_CASE("exec: exit 0 is ok") {
  HandlerResult r = RunCommand({"/bin/true"});
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.detail == "exit 0");
}

TEST_CASE("exec: an exit code in permanent_exit_codes is permanent, 65 by default") {
  CHECK(RunCommand({"/bin/sh", "-c", "exit 65"}).outcome == Outcome::kPermanent);
  CHECK(RunCommand({"/bin/sh", "-c", "exit 65"}, Event(), "permanent_exit_codes: [7]").outcome ==
        Outcome::kFailed);
  CHECK(RunCommand({"/bin/sh", "-c", "exit 7"}, Event(), "permanent_exit_codes: [7, 8]").outcome ==
        Outcome::kPermanent);
}

TEST_CASE("exec: any other exit is failed, with the code and the output's tail") {
  HandlerResult r = RunCommand({"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"});
  CHECK(r.outcome == Outcome::kFailed);
  CHECK(r.detail.starts_with("exit 3"));
  CHECK(r.detail.find("to-stdout") != std::string::npos);
  CHECK(r.detail.find("to-stderr") != std::string::npos);
}

TEST_CASE("exec: killed by a signal is failed") {
  HandlerResult r = RunCommand({"/bin/sh", "-c", "kill -TERM $$"});
  CHECK(r.outcome == Outcome::kFailed);
  CHECK(r.detail == "signal 15");
}

TEST_CASE("exec: 10 MB of output keeps only a bounded tail") {
  HandlerResult r = RunCommand(
      {"/bin/sh", "-c", "head -c 10000000 /dev/zero | tr '\\0' x; echo; echo the-end >&2"});
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.detail.size() < 2200);
  CHECK(r.detail.find("...x") != std::string::npos);
  CHECK(r.detail.ends_with("the-end"));
}

TEST_CASE("exec: the body arrives on stdin byte for byte") {
  TempDir dir;
  std::string body(1 << 20, '\0');
  std::mt19937 random(42);
  for (char& c : body) c = static_cast<char>(random());
  HandlerResult r = RunCommand({"/bin/sh", "-c", "cat > \"$0\"", dir / "got"}, Event("e", body));
  CHECK(r.outcome == Outcome::kOk);
  CHECK(ReadAll(dir / "got") == body);
}

TEST_CASE("exec: the child sees the HOOKBOX_* variables and none of the daemon's others") {
  ::setenv("FAKE_WEBHOOK_SECRET", "whsec_do_not_leak", 1);
  TempDir dir;
  HandlerEvent event = Event("evt_42");
  event.sequence = "17";
  event.attempt = 3;
  HandlerResult r = RunCommand({"/usr/bin/env"}, event, "env: {GREETING: hello}");
  ::unsetenv("FAKE_WEBHOOK_SECRET");
  REQUIRE(r.outcome == Outcome::kOk);
  const std::string& env = r.detail;
  for (const char* expected :
       {"HOOKBOX_ENDPOINT=ep\n", "HOOKBOX_EVENT_ID=evt_42\n", "HOOKBOX_EVENT_TYPE=invoice.paid\n",
        "HOOKBOX_RESOURCE=\n", "HOOKBOX_SEQUENCE=17\n", "HOOKBOX_ATTEMPT=3\n",
        "HOOKBOX_IDEMPOTENCY_KEY=ep:evt_42", "GREETING=hello\n", "PATH="}) {
    CHECK(env.find(expected) != std::string::npos);
  }
  CHECK(env.find("FAKE_WEBHOOK_SECRET") == std::string::npos);
  CHECK(env.find("whsec_do_not_leak") == std::string::npos);
}

TEST_CASE("exec: a replay's run sees its generation and its own idempotency key") {
  HandlerEvent event = Event("evt_42");
  CHECK(RunCommand({"/usr/bin/env"}, event).detail.find("HOOKBOX_REPLAY_GENERATION=0") !=
        std::string::npos);
  event.generation = 2;
  HandlerResult r = RunCommand({"/usr/bin/env"}, event);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(r.detail.find("HOOKBOX_REPLAY_GENERATION=2") != std::string::npos);
  CHECK(r.detail.find("HOOKBOX_IDEMPOTENCY_KEY=ep/replay-2:evt_42\n") != std::string::npos);
}

TEST_CASE("exec: argv is passed literally, never to a shell") {
  HandlerResult r = RunCommand({"/bin/echo", "$(id); rm -rf / `x` | && > y"});
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.detail == "exit 0; output: $(id); rm -rf / `x` | && > y");
}

TEST_CASE("exec: a bare program name is found on PATH at load") {
  HandlerResult r = RunCommand({"echo", "found"});
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.detail == "exit 0; output: found");
}

TEST_CASE("exec: at the timeout the whole process group is killed before Run returns") {
  TempDir dir;
  auto built = Build("exec", Command({"/bin/sh", "-c", "sleep 30 & echo $! > \"$0\"; sleep 30",
                                      dir / "grandchild.pid"},
                                     "timeout: 300ms"));
  REQUIRE(built.handler != nullptr);
  CHECK(built.handler->timeout() == std::chrono::milliseconds(300));

  auto started = std::chrono::steady_clock::now();
  HandlerResult r = built.handler->Run(Event());
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(r.outcome == Outcome::kTimeout);
  CHECK(took >= std::chrono::milliseconds(300));
  CHECK(took < std::chrono::seconds(5));

  std::smatch m;
  REQUIRE(
      std::regex_search(r.detail, m, std::regex("timeout after 300ms \\(process group (\\d+)")));
  const int pgid = std::stoi(m[1]);
  CHECK(GroupGone(pgid));
  const int grandchild = std::stoi(ReadAll(dir / "grandchild.pid"));
  CHECK(grandchild != pgid);
  // Gone, or a zombie waiting for its new parent: either way it cannot run.
  errno = 0;
  CHECK((::kill(grandchild, 0) == -1 ? errno == ESRCH : LiveMembers(pgid).empty()));
}

TEST_CASE("exec: a child that never reads stdin cannot block a 1 MB body") {
  const std::string body(1 << 20, 'b');
  SECTION("it exits at once") {
    CHECK(RunCommand({"/bin/true"}, Event("e", body)).outcome == Outcome::kOk);
  }
  SECTION("it writes 4 MB and exits") {
    HandlerResult r = RunCommand({"/bin/sh", "-c", "head -c 4000000 /dev/zero"}, Event("e", body),
                                 "timeout: 20s");
    CHECK(r.outcome == Outcome::kOk);
  }
  SECTION("it never exits: the timeout ends it") {
    HandlerResult r = RunCommand({"/bin/sleep", "30"}, Event("e", body), "timeout: 200ms");
    CHECK(r.outcome == Outcome::kTimeout);
  }
}

TEST_CASE("exec: the factory reports every problem") {
  auto built = Build("exec",
                     "{command: [./relative], timeout: 30, permanent_exit_codes: [0, x, 300],"
                     " env: {1BAD: x, HOOKBOX_EVENT_ID: y, OK: [1]}, shell: true}");
  CHECK(built.handler == nullptr);
  INFO(built.Errors());
  CHECK(built.HasError("h.command[0]: \"./relative\" is a relative path"));
  CHECK(built.HasError("h.timeout: \"30\" is not a duration"));
  CHECK(built.HasError("h.permanent_exit_codes[0]: expected an exit code from 1 to 255"));
  CHECK(built.HasError("h.permanent_exit_codes[1]:"));
  CHECK(built.HasError("h.permanent_exit_codes[2]:"));
  CHECK(built.HasError("h.env.1BAD: not a variable name"));
  CHECK(built.HasError("h.env.HOOKBOX_EVENT_ID: HOOKBOX_* variables are set by hookbox"));
  CHECK(built.HasError("h.env.OK: expected text"));
  CHECK(built.HasError("h: unknown key \"shell\""));
  CHECK(built.errors.size() == 9);

  CHECK(Build("exec", "{timeout: 5s}").HasError("h: command is required"));
  CHECK(Build("exec", "{command: []}").HasError("h.command: expected a non-empty list"));
  CHECK(Build("exec", "{command: /bin/true}").HasError("h.command: expected a non-empty list"));
  CHECK(Build("exec", "{command: [no-such-program-hookbox]}")
            .HasError("h.command[0]: \"no-such-program-hookbox\" is not found on PATH"));
  TempDir dir;
  std::ofstream(dir / "plain") << "not a program";
  CHECK(Build("exec", Command({dir / "plain"})).HasError("is not an executable file"));
  CHECK(Build("exec", "{command: [/bin/true], timeout: 0s}")
            .HasError("h.timeout: must be longer than 0"));
  CHECK(Build("exec", "[/bin/true]").HasError("h: expected a mapping"));
}

TEST_CASE("exec: a program that disappears after load is a failed attempt") {
  TempDir dir;
  const std::string program = dir / "gone";
  std::filesystem::copy_file("/bin/true", program);
  auto built = Build("exec", Command({program}));
  REQUIRE(built.handler != nullptr);
  std::filesystem::remove(program);
  HandlerResult r = built.handler->Run(Event());
  CHECK(r.outcome == Outcome::kFailed);
  CHECK(r.detail.find("cannot start " + program) != std::string::npos);
}

TEST_CASE("exec: the child starts in /, or in its workdir, never in the daemon's directory") {
  TempDir dir;
  HandlerResult r = RunCommand({"/bin/pwd"});
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.detail == "exit 0; output: /");
  r = RunCommand({"/bin/pwd"}, Event(), "workdir: " + Quoted(dir.path()));
  CHECK(r.outcome == Outcome::kOk);
  CHECK(r.detail == "exit 0; output: " + dir.path());
}

TEST_CASE("exec: workdir must be an absolute path to a directory, checked at load") {
  TempDir dir;
  std::ofstream(dir / "plain") << "a file";
  CHECK(Build("exec", "{command: [/bin/true], workdir: relative/dir}")
            .HasError("h.workdir: expected an absolute path"));
  CHECK(Build("exec", "{command: [/bin/true], workdir: [/]}")
            .HasError("h.workdir: expected an absolute path"));
  CHECK(Build("exec", "{command: [/bin/true], workdir: " + Quoted(dir / "missing") + "}")
            .HasError("h.workdir: \"" + (dir / "missing") + "\": No such file or directory"));
  CHECK(Build("exec", "{command: [/bin/true], workdir: " + Quoted(dir / "plain") + "}")
            .HasError("h.workdir: \"" + (dir / "plain") + "\" is not a directory"));
}

TEST_CASE("exec: what the child left in its group is killed when it exits 0") {
  TempDir dir;
  HandlerResult r =
      RunCommand({"/bin/sh", "-c", "sleep 300 & echo $! > \"$0\"; exit 0", dir / "left.pid"});
  CHECK(r.outcome == Outcome::kOk);
  const int left = std::stoi(ReadAll(dir / "left.pid"));
  const int pgid = ::getpgid(left);  // the child's group, while `left` is in it
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool gone = false;
  while (!(gone = pgid < 0 || LiveMembers(pgid).empty()) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(gone);
  ::kill(left, SIGKILL);  // in case it was not
}

// A hostile child (issue 41), a Python script: it tries to move into its parent's process
// group (this test process's), out of reach of a kill of its own group, writes its pid to
// argv[1], then sleeps for two minutes. Spawn's session makes the move fail (EPERM), which
// it ignores.
constexpr const char* kHostile = R"py(import os, sys, time
try:
    os.setpgid(0, os.getpgid(os.getppid()))
except OSError:
    pass
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(120)
)py";

// True while `pid` runs: /proc has it and it is not a zombie.
bool Running(int pid) {
  const std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  return stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

// The attempts' ends in the order their `done` was called. Shared with the dones, which run
// on the watch's thread, possibly after a failed check has ended the test.
struct Ends {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<std::string> order;
  std::map<std::string, HandlerResult> results;

  static Handler::Done DoneFor(const std::shared_ptr<Ends>& ends, const std::string& name) {
    return [ends, name](HandlerResult r) {
      std::lock_guard lock(ends->mu);
      ends->order.push_back(name);
      ends->results.emplace(name, std::move(r));
      ends->changed.notify_all();
    };
  }
  // Waits (bounded: a broken watch ends the test, not hangs it) for `name`'s done.
  bool WaitFor(const std::string& name, std::chrono::seconds bound) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, bound, [&] { return results.count(name) == 1; });
  }
  int Position(const std::string& name) {
    std::lock_guard lock(mu);
    auto at = std::find(order.begin(), order.end(), name);
    return at == order.end() ? -1 : static_cast<int>(at - order.begin());
  }
  Outcome OutcomeOf(const std::string& name) {
    std::lock_guard lock(mu);
    return results.at(name).outcome;
  }
  // Every end so far, for a failure's message.
  std::string Text() {
    std::lock_guard lock(mu);
    std::string text;
    for (const auto& [name, r] : results) text += name + ": " + r.detail + "\n";
    return text;
  }
};

// Whatever a test case's checks did: the hostile child is killed, so a watch stuck on it
// comes free, and then the threads that started children are joined.
struct Cleanup {
  int hostile = 0;
  std::vector<std::thread> starts;
  ~Cleanup() {
    if (hostile > 0 && Running(hostile)) ::kill(hostile, SIGKILL);
    for (std::thread& t : starts) t.join();
  }
};

TEST_CASE(
    "exec: a child that moves into the daemon's process group is killed at its timeout, and "
    "other children run meanwhile") {
  TempDir dir;
  std::ofstream(dir / "hostile.py") << kHostile;
  auto hostile =
      Build("exec",
            Command({"/usr/bin/python3", dir / "hostile.py", dir / "hostile.pid"}, "timeout: 3s"));
  auto fast = Build("exec", Command({"/bin/sh", "-c", "echo fast"}));
  INFO(hostile.Errors() + fast.Errors());
  REQUIRE(hostile.handler != nullptr);
  REQUIRE(fast.handler != nullptr);
  auto ends = std::make_shared<Ends>();
  Cleanup cleanup;
  // Each start on a thread of its own, since a watch stuck on the hostile child would block
  // it, and one that lives until the child's done (PR_SET_PDEATHSIG: spawn.h).
  auto start = [&](Handler& handler, const std::string& name) {
    cleanup.starts.emplace_back([&handler, ends, name] {
      handler.Start(Event(name), Ends::DoneFor(ends, name));
      ends->WaitFor(name, std::chrono::seconds(60));
    });
  };

  start(*hostile.handler, "hostile");
  for (auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       cleanup.hostile == 0 && std::chrono::steady_clock::now() < give_up;) {
    const std::string text = ReadAll(dir / "hostile.pid");
    if (!text.empty()) cleanup.hostile = std::stoi(text);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const int pid = cleanup.hostile;
  INFO(ends->Text());
  REQUIRE(pid > 0);

  // While the hostile child sleeps: a fast one is started and reported before it.
  start(*fast.handler, "fast-1");
  CHECK(ends->WaitFor("fast-1", std::chrono::seconds(10)));
  // Past its deadline the hostile attempt ends, as a timeout, and its process is gone.
  CHECK(ends->WaitFor("hostile", std::chrono::seconds(10)));
  CHECK_FALSE(Running(pid));
  // The watch still starts and reports children.
  start(*fast.handler, "fast-2");
  CHECK(ends->WaitFor("fast-2", std::chrono::seconds(10)));

  // A failing run: the hostile child killed, every done waited for.
  if (Running(pid)) ::kill(pid, SIGKILL);
  for (const char* name : {"hostile", "fast-1", "fast-2"}) {
    INFO(name);
    REQUIRE(ends->WaitFor(name, std::chrono::seconds(20)));
  }
  CHECK(ends->Position("fast-1") < ends->Position("hostile"));
  CHECK(ends->OutcomeOf("hostile") == Outcome::kTimeout);
  CHECK(ends->OutcomeOf("fast-1") == Outcome::kOk);
  CHECK(ends->OutcomeOf("fast-2") == Outcome::kOk);
}

}  // namespace
}  // namespace hookbox
