// Tests for handlers/http when the daemon is out of file descriptors: a POST that cannot
// even open its socket is an infrastructure failure (retried without spending the job's
// attempt budget), while a downstream that refuses the connection is the handler's
// ordinary failure. Each case runs in a forked child with its descriptor table filled
// (tests/ops/fdlimit.h).
#include <catch2/catch.hpp>

#include "tests/handlers/testing.h"
#include "tests/ops/fdlimit.h"

namespace hookbox {
namespace {

using testing::Build;
using testing::ChildReport;
using testing::RunWithFreeDescriptors;

TEST_CASE("http: no descriptor for the socket is an infrastructure failure", "[fork]") {
  // Port 9 on loopback: nothing listens, so a socket that opens is refused at once.
  auto built = Build("http", R"({url: "http://127.0.0.1:9/hook", timeout: 2s})");
  INFO(built.Errors());
  REQUIRE(built.handler != nullptr);
  // One run with descriptors to spare first: UBSan (in `make test`'s ASan+UBSan build)
  // checks each virtual call's object once, with a pipe, and caches the answer; the child
  // inherits the cache, so its checks need no descriptor it cannot have.
  CHECK(built.handler->Run(testing::Event()).outcome == Outcome::kFailed);
  ChildReport none = RunWithFreeDescriptors(*built.handler, 0);
  REQUIRE(none.setup_ok);
  CHECK(none.infrastructure);
  CHECK(none.outcome == "failed");
  CHECK(none.detail == "cannot open a socket: Too many open files");

  ChildReport some = RunWithFreeDescriptors(*built.handler, 16);
  REQUIRE(some.setup_ok);
  CHECK_FALSE(some.infrastructure);
  CHECK(some.outcome == "failed");
  CHECK(some.detail.rfind("POST failed: cannot connect", 0) == 0);
}

}  // namespace
}  // namespace hookbox
