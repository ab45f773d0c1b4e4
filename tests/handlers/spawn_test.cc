// Tests for handlers/exec/spawn: what a child started by Spawn() has and has not, read from
// /proc while it runs (/bin/sleep) or reported by the child itself (/bin/sh -c, its script
// and arguments passed as argv); errors of a child that cannot start, and the reaping of
// it; and PR_SET_PDEATHSIG, proven by killing the process that spawned a child.
#include "handlers/exec/spawn.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/handlers/testing.h"

namespace hookbox {
namespace {

using testing::ReadAll;
using testing::TempDir;

// A null-terminated char* array over strings that outlive it.
class Strings final {
 public:
  explicit Strings(std::vector<std::string> items) : items_(std::move(items)) {
    for (std::string& s : items_) ptrs_.push_back(s.data());
    ptrs_.push_back(nullptr);
  }
  char* const* get() const { return ptrs_.data(); }
  const std::vector<std::string>& items() const { return items_; }

 private:
  std::vector<std::string> items_;
  std::vector<char*> ptrs_;
};

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  void CloseRead() {
    if (read >= 0) ::close(read);
    read = -1;
  }
  void CloseWrite() {
    if (write >= 0) ::close(write);
    write = -1;
  }
};

std::string Drain(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

int Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

std::string Link(const std::string& path) {
  std::error_code ec;
  return std::filesystem::read_symlink(path, ec).string();
}

// The descriptors a process has open, from /proc.
std::set<int> OpenFds(pid_t pid) {
  std::set<int> fds;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    fds.insert(std::stoi(e.path().filename().string()));
  }
  return fds;
}

// The value of `key:` in /proc/<pid>/status.
std::string StatusField(pid_t pid, const std::string& key) {
  std::string status = ReadAll("/proc/" + std::to_string(pid) + "/status");
  size_t at = status.find("\n" + key + ":");
  if (at == std::string::npos) return "";
  at = status.find_first_not_of(" \t", at + key.size() + 2);
  return status.substr(at, status.find('\n', at) - at);
}

// This process's children, zombies included, from /proc (ppid field of each stat).
std::set<int> Children() {
  std::set<int> children;
  const std::string self = std::to_string(::getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = ReadAll(entry.path() / "stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) != 2) continue;
    if (std::to_string(ppid) == self) children.insert(std::stoi(name));
  }
  return children;
}

Spawned SpawnArgv(const Strings& argv, const Strings& env, int in, int out) {
  return Spawn({argv.items()[0].c_str(), argv.get(), env.get(), in, out});
}

// The ppid field of /proc/<pid>/stat; 0 when it cannot be read.
int ParentOf(pid_t pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  char state = 0;
  int ppid = 0;
  if (paren == std::string::npos || sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) != 2)
    return 0;
  return ppid;
}

TEST_CASE(
    "spawn: the child starts in workdir and is a subreaper: what it orphans comes back to it") {
  TempDir dir;
  const std::string pid_file = dir / "orphan.pid";
  // A subshell starts sleep in the background and exits at once: sleep is orphaned.
  Strings argv({"/bin/sh", "-c",
                "(sleep 30 & echo $! > \"$0.tmp\"; mv \"$0.tmp\" \"$0\"); exec sleep 30",
                pid_file});
  Strings env({"PATH=/usr/bin:/bin"});
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  Spawned child =
      Spawn({argv.items()[0].c_str(), argv.get(), env.get(), null, null, dir.path().c_str()});
  ::close(null);
  REQUIRE(child.pid > 0);
  CHECK(Link("/proc/" + std::to_string(child.pid) + "/cwd") == dir.path());
  int orphan = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = ReadAll(pid_file);
    if (!text.empty()) orphan = std::stoi(text);
    if (orphan > 0 && ParentOf(orphan) == child.pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(orphan > 0);
  CHECK(ParentOf(orphan) == child.pid);  // not init's, not this process's
  ::kill(orphan, SIGKILL);
  ::kill(child.pid, SIGKILL);
  Reap(child.pid);
}

TEST_CASE(
    "spawn: the child leads its own session and group, has only 0-2 open, envp, default "
    "signals") {
  // What the daemon has that the child must not: a blocked signal, an ignored one, and
  // descriptors without close-on-exec.
  sigset_t usr1, saved_mask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  REQUIRE(::pthread_sigmask(SIG_BLOCK, &usr1, &saved_mask) == 0);
  struct sigaction ignore {
  }, saved_pipe{};
  ignore.sa_handler = SIG_IGN;
  REQUIRE(::sigaction(SIGPIPE, &ignore, &saved_pipe) == 0);
  const int leaked = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC, on purpose
  REQUIRE(leaked >= 3);
  const int leaked_high = ::dup2(leaked, 100);
  REQUIRE(leaked_high == 100);

  Pipe in, out;
  Strings argv({"/bin/sleep", "30"});
  Strings env({"PATH=/usr/bin:/bin", "HOOKBOX_SPAWN=two words", "EMPTY="});
  Spawned child = SpawnArgv(argv, env, in.read, out.write);

  ::pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  ::sigaction(SIGPIPE, &saved_pipe, nullptr);
  REQUIRE(child.error == 0);
  REQUIRE(child.pid > 0);
  const std::string proc = "/proc/" + std::to_string(child.pid);

  // Spawn returns once the child's execve is past its point of no return; the kernel fills
  // in the new program's argument and environment area a moment later.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (ReadAll(proc + "/cmdline").empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(::getpgid(child.pid) == child.pid);
  CHECK(::getsid(child.pid) == child.pid);  // so it cannot move into this process's group
  CHECK(Link(proc + "/exe") == std::filesystem::canonical("/bin/sleep").string());
  CHECK(ReadAll(proc + "/cmdline") == std::string("/bin/sleep\0"
                                                  "30\0",
                                                  14));
  CHECK(ReadAll(proc + "/environ") ==
        std::string("PATH=/usr/bin:/bin\0HOOKBOX_SPAWN=two words\0EMPTY=\0", 50));
  CHECK(StatusField(child.pid, "SigBlk") == "0000000000000000");
  CHECK(StatusField(child.pid, "SigIgn") == "0000000000000000");

  // The dynamic loader may hold a descriptor for a moment while sleep starts: wait until
  // the table is the final one (a leaked descriptor stays, so this fails in the end).
  std::set<int> fds;
  do {
    fds = OpenFds(child.pid);
    if (fds == std::set<int>{0, 1, 2}) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  CHECK(fds == std::set<int>{0, 1, 2});
  const std::string self = "/proc/self/fd/";
  CHECK(Link(proc + "/fd/0") == Link(self + std::to_string(in.read)));
  CHECK(Link(proc + "/fd/1") == Link(self + std::to_string(out.write)));
  CHECK(Link(proc + "/fd/2") == Link(self + std::to_string(out.write)));

  ::kill(child.pid, SIGKILL);
  int status = Reap(child.pid);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  ::close(leaked);
  ::close(leaked_high);
}

TEST_CASE("spawn: argv reaches the program verbatim, stdin arrives, stdout and stderr in one") {
  Pipe in, out;
  const std::string body = "line one\nline two\n";
  REQUIRE(::write(in.write, body.data(), body.size()) == static_cast<ssize_t>(body.size()));
  in.CloseWrite();
  // USR1 at its default disposition kills the script.
  const char* const script =
      "printf '[%s]' \"$@\"; echo; cat; echo to-stderr >&2; "
      "kill -s USR1 $$; echo not-reached";
  Strings argv({"/bin/sh", "-c", script, "sh", "two words", "$HOME;`id`", "*", ""});
  Strings env({"PATH=/usr/bin:/bin"});
  sigset_t usr1, saved_mask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  REQUIRE(::pthread_sigmask(SIG_BLOCK, &usr1, &saved_mask) == 0);
  Spawned child = SpawnArgv(argv, env, in.read, out.write);
  ::pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  REQUIRE(child.error == 0);
  REQUIRE(child.pid > 0);
  in.CloseRead();
  out.CloseWrite();
  const std::string output = Drain(out.read);
  const int status = Reap(child.pid);
  CHECK(output == "[two words][$HOME;`id`][*][]\nline one\nline two\nto-stderr\n");
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1));
}

TEST_CASE("spawn: descriptors given as 0 and 1, crossed, still land on the right numbers") {
  Pipe in, out;
  REQUIRE(::write(in.write, "crossed\n", 8) == 8);
  in.CloseWrite();
  const int saved0 = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  const int saved1 = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  REQUIRE(saved0 >= 0);
  REQUIRE(saved1 >= 0);
  // stdin data on this process's 1, the output pipe on its 0 (both close-on-exec, as the
  // daemon's own would be).
  ::dup3(in.read, 1, O_CLOEXEC);
  ::dup3(out.write, 0, O_CLOEXEC);
  Strings argv({"/bin/sh", "-c", "cat; echo err >&2"});
  Strings env({"PATH=/usr/bin:/bin"});
  Spawned child = SpawnArgv(argv, env, 1, 0);
  ::dup2(saved0, 0);
  ::dup2(saved1, 1);
  ::close(saved0);
  ::close(saved1);
  REQUIRE(child.error == 0);
  REQUIRE(child.pid > 0);
  in.CloseRead();
  out.CloseWrite();
  const std::string output = Drain(out.read);
  const int status = Reap(child.pid);
  CHECK(output == "crossed\nerr\n");
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("spawn: a child that cannot start gives execve's errno and leaves no zombie") {
  TempDir dir;
  const std::string not_executable = dir / "script";
  { std::ofstream(not_executable) << "#!/bin/sh\ntrue\n"; }
  ::chmod(not_executable.c_str(), 0644);
  Pipe in, out;
  Strings env({"PATH=/usr/bin:/bin"});
  struct Case {
    std::string program;
    int in_fd, expected;
  };
  const std::vector<Case> cases = {
      {"/nonexistent/program", in.read, ENOENT},
      {not_executable, in.read, EACCES},
      {dir.path(), in.read, EACCES},
      {"/bin/true", 1000, EBADF},  // not open: the child's dup3 fails, before execve
  };
  for (const Case& c : cases) {
    INFO(c.program);
    const std::set<int> before = Children();
    Strings argv({c.program});
    Spawned child = Spawn({c.program.c_str(), argv.get(), env.get(), c.in_fd, out.write});
    CHECK(child.pid == -1);
    CHECK(child.error == c.expected);
    CHECK(Children() == before);
  }
}

TEST_CASE("spawn: EMFILE in the child comes back unchanged") {
  // In a forked child of the test process, whose table is full: the child of Spawn cannot
  // move stdin (given as 0) above 2.
  int report[2];
  REQUIRE(::pipe2(report, O_CLOEXEC) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = 64;
    int result = -1;
    if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      while (::fcntl(report[1], F_DUPFD_CLOEXEC, 0) >= 0) {
      }
      char program[] = "/bin/true";
      char* argv[] = {program, nullptr};
      char* envp[] = {nullptr};
      Spawned child = Spawn({program, argv, envp, 0, report[1]});
      result = child.pid == -1 ? child.error : -2;
    }
    (void)!::write(report[1], &result, sizeof result);
    ::_exit(0);
  }
  ::close(report[1]);
  int result = 0;
  CHECK(::read(report[0], &result, sizeof result) == sizeof result);
  ::close(report[0]);
  Reap(pid);
  CHECK(result == EMFILE);
}

TEST_CASE("spawn: the child is SIGKILLed when the process that spawned it dies") {
  // R (a subreaper, so the orphan comes back to it) forks P; P spawns /bin/sleep 30 and
  // tells R its pid; R kills P with -9 and waits for the orphan, which must die of SIGKILL (which
  // nobody but PR_SET_PDEATHSIG sent it) within 5 s. R's exit code: 0 proven, 1 setup, 2 no pid
  // from P, 3 child not alive before, 4 still running after 5 s (killed by R then), 5 died of
  // something else.
  const pid_t reaper = ::fork();
  REQUIRE(reaper >= 0);
  if (reaper == 0) {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) ::_exit(1);
    int channel[2];
    if (::pipe(channel) != 0) ::_exit(1);
    const pid_t parent = ::fork();
    if (parent < 0) ::_exit(1);
    if (parent == 0) {
      // From P's main thread: TSan forbids new threads in a forked child of a threaded
      // process (the concurrent case is the last test's).
      ::close(channel[0]);
      char program[] = "/bin/sleep";
      char thirty[] = "30";
      char* argv[] = {program, thirty, nullptr};
      char* envp[] = {nullptr};
      const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      Spawned child = Spawn({program, argv, envp, null, null});
      (void)!::write(channel[1], &child.pid, sizeof child.pid);
      for (;;) ::pause();
    }
    ::close(channel[1]);
    pid_t child = -1;
    if (::read(channel[0], &child, sizeof child) != sizeof child || child <= 0) ::_exit(2);
    if (::kill(child, 0) != 0) ::_exit(3);
    ::kill(parent, SIGKILL);
    int status = 0;
    ::waitpid(parent, &status, 0);
    for (int i = 0; i < 500; ++i) {
      const pid_t got = ::waitpid(child, &status, WNOHANG);
      if (got == child) {
        ::_exit(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 5);
      }
      ::usleep(10 * 1000);
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    ::_exit(4);
  }
  const int status = Reap(reaper);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("spawn: threads spawning at once each get their own child") {
  constexpr int kThreads = 4, kEach = 25;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ok, t] {
      char program[] = "/bin/sh";
      char dash_c[] = "-c";
      char script[] = "exit $1";
      char name[] = "sh";
      std::string code = std::to_string(t + 1);
      char* argv[] = {program, dash_c, script, name, code.data(), nullptr};
      char* envp[] = {nullptr};
      const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      for (int i = 0; i < kEach; ++i) {
        Spawned child = Spawn({program, argv, envp, null, null});
        if (child.pid <= 0) continue;
        int status = 0;
        ::waitpid(child.pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == t + 1) ok.fetch_add(1);
      }
      ::close(null);
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(ok.load() == kThreads * kEach);
}

}  // namespace
}  // namespace hookbox
