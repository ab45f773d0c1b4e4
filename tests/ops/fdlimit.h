// A handler run with its descriptor table full but for a few (tests of handlers that meet
// EMFILE): in a forked child of the test process, which lowers its own soft
// RLIMIT_NOFILE, fills its descriptor table, frees `free_fds`, runs the handler and reports
// the result through a pipe; the test process's own table and limits are never touched.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "tests/handlers/testing.h"

namespace hookbox::testing {

constexpr rlim_t kLowLimit = 256;

struct ChildReport {
  bool setup_ok = false;
  bool infrastructure = false;
  std::string outcome;
  std::string detail;
};

// Runs `handler` in a forked child whose descriptor table is full but for `free_fds`.
inline ChildReport RunWithFreeDescriptors(Handler& handler, int free_fds) {
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

}  // namespace hookbox::testing
