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
#include "tests/ops/fdlimit.h"

namespace hookbox {
namespace {

using testing::Build;
using testing::ChildReport;
using testing::Event;
using testing::RunWithFreeDescriptors;
using testing::TempDir;

std::unique_ptr<Handler> EchoHandler() {
  auto built = Build("exec", R"({command: ["/bin/sh", "-c", "echo ran"], timeout: 10s})");
  INFO(built.Errors());
  REQUIRE(built.handler != nullptr);
  return std::move(built.handler);
}

TEST_CASE("exec: no descriptor for the pipes is an infrastructure failure, not the handler's",
          "[fork]") {
  auto handler = EchoHandler();
  // One run with descriptors to spare first: UBSan (in `make test`'s ASan+UBSan build)
  // checks each virtual call's object once, with a pipe, and caches the answer; the child
  // inherits the cache, so its checks need no descriptor it cannot have.
  CHECK(handler->Run(Event()).outcome == Outcome::kOk);
  // 0 and 1 free: the child watch's epoll set and eventfd (made on first use, in the forked
  // test process); 2: the stdin pipe; 4: the output pipe.
  for (int free_fds : {0, 1, 2, 3, 4, 5}) {
    INFO("free descriptors: " << free_fds);
    ChildReport r = RunWithFreeDescriptors(*handler, free_fds);
    REQUIRE(r.setup_ok);
    CHECK(r.infrastructure);
    CHECK(r.outcome == "failed");
    CHECK(r.detail == (free_fds < 2 ? "cannot watch children: Too many open files"
                                    : "cannot create pipes: Too many open files"));
  }
}

TEST_CASE("exec: with just the descriptors for its pipes, the child runs with its output",
          "[fork]") {
  auto handler = EchoHandler();
  // 6: the watch's two descriptors and the two pipes, and nothing more (the pidfd must do
  // without: the watch then looks for the child's exit every 10 ms).
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
  { std::ofstream(script) << "#!/bin/sh\nexit 0\n"; }
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
