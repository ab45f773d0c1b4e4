// Tests for handlers/exec when the daemon is out of file descriptors: an attempt that cannot
// create its pipes is an infrastructure failure (HandlerResult::infrastructure, retried by
// the worker without spending the job's attempt budget), not the handler's failure; with
// just enough descriptors for the pipes, the child still runs with its stdin, stdout and
// stderr. Each case runs in a forked child of the test process, which lowers its own soft
// RLIMIT_NOFILE, fills its descriptor table, frees a few, runs the handler and reports the
// result through a pipe: the test process's own table and limits are never touched.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "tests/handlers/testing.h"

namespace hookbox {
namespace {

using testing::Build;
using testing::Event;
using testing::TempDir;

constexpr rlim_t kLowLimit = 256;

struct ChildReport {
  bool setup_ok = false;
  bool infrastructure = false;
  std::string outcome;
  std::string detail;
};

// Runs `handler` in a forked child whose descriptor table is full but for `free_fds`.
ChildReport RunWithFreeDescriptors(Handler& handler, int free_fds) {
  int report[2];
  REQUIRE(::pipe2(report, O_CLOEXEC) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(report[0]);
    auto say = [&](const std::string& text) {
      (void)!::write(report[1], text.data(), text.size());
      ::_exit(0);
    };
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = kLowLimit;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) say("setup: setrlimit failed");
    std::vector<int> filler;
    for (;;) {
      int fd = ::fcntl(report[1], F_DUPFD_CLOEXEC, 0);
      if (fd < 0) {
        if (errno != EMFILE) say("setup: dup failed with " + std::to_string(errno));
        break;
      }
      filler.push_back(fd);
    }
    if (filler.size() < static_cast<size_t>(free_fds) + 8) say("setup: too few filled");
    for (int i = 0; i < free_fds; ++i) {
      ::close(filler.back());
      filler.pop_back();
    }
    HandlerResult r = handler.Run(Event());
    say(std::string("ok\n") + (r.infrastructure ? "1" : "0") + "\n" + OutcomeName(r.outcome) +
        "\n" + r.detail);
  }
  ::close(report[1]);
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(report[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(report[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);

  ChildReport out;
  INFO(text);
  if (text.rfind("ok\n", 0) != 0) return out;
  out.setup_ok = true;
  size_t a = 3, b = text.find('\n', a), c = text.find('\n', b + 1);
  out.infrastructure = text.substr(a, b - a) == "1";
  out.outcome = text.substr(b + 1, c - b - 1);
  out.detail = text.substr(c + 1);
  return out;
}

std::unique_ptr<Handler> EchoHandler() {
  auto built = Build("exec", R"({command: ["/bin/sh", "-c", "echo ran"], timeout: 10s})");
  INFO(built.Errors());
  REQUIRE(built.handler != nullptr);
  return std::move(built.handler);
}

TEST_CASE("exec: no descriptor for the pipes is an infrastructure failure, not the handler's") {
  auto handler = EchoHandler();
  // 0 free: the stdin pipe fails; 2: the output pipe; 4: the pipe for execve's error.
  for (int free_fds : {0, 1, 2, 3, 4, 5}) {
    INFO("free descriptors: " << free_fds);
    ChildReport r = RunWithFreeDescriptors(*handler, free_fds);
    REQUIRE(r.setup_ok);
    CHECK(r.infrastructure);
    CHECK(r.outcome == "failed");
    CHECK(r.detail == "cannot create pipes: Too many open files");
  }
}

TEST_CASE("exec: with just the descriptors for its pipes, the child runs with its output") {
  auto handler = EchoHandler();
  // 6: the three pipes, and nothing more (the child's own copy of the error pipe's end, and
  // the pidfd, must do without a new descriptor).
  for (int free_fds : {6, 7, 32}) {
    INFO("free descriptors: " << free_fds);
    ChildReport r = RunWithFreeDescriptors(*handler, free_fds);
    REQUIRE(r.setup_ok);
    CHECK_FALSE(r.infrastructure);
    CHECK(r.outcome == "ok");
    CHECK(r.detail == "exit 0; output: ran");
  }
}

TEST_CASE("exec: an ordinary failure to start is not an infrastructure failure") {
  TempDir dir;
  const std::string script = dir / "gone.sh";
  {
    std::ofstream(script) << "#!/bin/sh\nexit 0\n";
  }
  REQUIRE(::chmod(script.c_str(), 0755) == 0);
  auto built = Build("exec", "{command: [" + testing::Quoted(script) + "]}");
  REQUIRE(built.handler != nullptr);
  REQUIRE(::unlink(script.c_str()) == 0);  // gone after load: execve says ENOENT
  HandlerResult r = built.handler->Run(Event());
  CHECK(r.outcome == Outcome::kFailed);
  CHECK_FALSE(r.infrastructure);
  CHECK(r.detail.find("No such file or directory") != std::string::npos);
}

}  // namespace
}  // namespace hookbox
