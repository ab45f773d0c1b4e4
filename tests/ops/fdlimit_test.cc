// Unit tests of ops/fdlimit: the descriptors kept out of limits.max_connections (the
// reserve), and max_connections fitted under the soft open-file limit — kept, lowered, or
// refused when not even the minimum fits. Pure arithmetic; the process's own limits are
// only read, in the last test.
#include "ops/fdlimit.h"

#include <sys/resource.h>

#include <catch2/catch.hpp>

using namespace hookbox;

TEST_CASE("fdlimit: the reserve is 64, 8 per worker and webhook thread, PostgreSQL's pools") {
  CHECK(DescriptorReserve({0, 0, false}) == 64);
  CHECK(DescriptorReserve({4, 16, false}) == 64 + 8 * 20);  // the defaults: 224
  CHECK(DescriptorReserve({4, 16, true}) == 64 + 8 * 20 + 26);
  CHECK(DescriptorReserve({1, 2, false}) == 88);
  CHECK(DescriptorReserve({-3, -1, false}) == 64);  // nonsense counts reserve nothing extra
}

TEST_CASE("fdlimit: max_connections that fits is kept") {
  // The unit's LimitNOFILE=65536 with the default config.
  auto fit = FitConnections(65536, 4096, {4, 16, false});
  REQUIRE(fit.ok());
  CHECK(fit->max_connections == 4096);
  CHECK_FALSE(fit->lowered);
  CHECK(fit->reserve == 224);
  // Exactly at the edge.
  fit = FitConnections(1024, 800, {4, 16, false});
  REQUIRE(fit.ok());
  CHECK(fit->max_connections == 800);
  CHECK_FALSE(fit->lowered);
}

TEST_CASE("fdlimit: max_connections that does not fit is lowered to what does") {
  // A shell's usual 1024 with the default config: 1024 - 224.
  auto fit = FitConnections(1024, 4096, {4, 16, false});
  REQUIRE(fit.ok());
  CHECK(fit->max_connections == 800);
  CHECK(fit->lowered);
  // PostgreSQL takes its pools out too.
  fit = FitConnections(1024, 4096, {4, 16, true});
  REQUIRE(fit.ok());
  CHECK(fit->max_connections == 1024 - 250);
  // The integration test's prlimit --nofile=128:128 with 1 worker and 2 threads: 128 - 88.
  fit = FitConnections(128, 1000, {1, 2, false});
  REQUIRE(fit.ok());
  CHECK(fit->max_connections == 40);
  CHECK(fit->lowered);
  // The minimum itself is enough.
  fit = FitConnections(64 + 16, 1000, {0, 0, false});
  REQUIRE(fit.ok());
  CHECK(fit->max_connections == 16);
}

TEST_CASE("fdlimit: fewer than 16 connections is refused, naming the numbers") {
  for (uint64_t limit : {uint64_t{0}, uint64_t{10}, uint64_t{64}, uint64_t{88}, uint64_t{103}}) {
    INFO(limit);
    auto fit = FitConnections(limit, 1000, {1, 2, false});
    REQUIRE_FALSE(fit.ok());
    CHECK(fit.status().code() == Status::Code::kInvalidArgument);
    const std::string text = fit.status().ToString();
    CHECK(text.find("open-file limit (" + std::to_string(limit) + ")") != std::string::npos);
    CHECK(text.find("88 descriptors") != std::string::npos);
    CHECK(text.find("at least 16") != std::string::npos);
  }
  CHECK(FitConnections(104, 1000, {1, 2, false}).ok());  // 104 - 88 = 16
  // A configured max_connections below the minimum is the operator's choice, and kept.
  auto small = FitConnections(65536, 2, {1, 2, false});
  REQUIRE(small.ok());
  CHECK(small->max_connections == 2);
}

TEST_CASE("fdlimit: no limit at all keeps max_connections") {
  auto fit = FitConnections(static_cast<uint64_t>(RLIM_INFINITY), 4096, {4, 16, true});
  REQUIRE(fit.ok());
  CHECK(fit->max_connections == 4096);
  CHECK_FALSE(fit->lowered);
}

TEST_CASE("fdlimit: RaiseNofileLimit raises the soft limit to the hard one") {
  rlimit saved{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
  if (saved.rlim_max == RLIM_INFINITY || saved.rlim_max <= 256) {
    WARN("the hard open-file limit leaves no room to lower the soft one: not checked");
    return;
  }
  // Lower the soft limit (always allowed: the hard one stays), raise it back the daemon's way.
  rlimit lowered = saved;
  lowered.rlim_cur = 256;
  REQUIRE(setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  auto limit = RaiseNofileLimit();
  rlimit now{};
  getrlimit(RLIMIT_NOFILE, &now);
  setrlimit(RLIMIT_NOFILE, &saved);
  REQUIRE(limit.ok());
  CHECK(limit->before == 256);
  CHECK(limit->soft == saved.rlim_max);
  CHECK(limit->hard == saved.rlim_max);
  CHECK(now.rlim_cur == saved.rlim_max);
  // Already at the hard limit: nothing changes.
  auto again = RaiseNofileLimit();
  REQUIRE(again.ok());
  CHECK(again->before == again->soft);
  setrlimit(RLIMIT_NOFILE, &saved);
}
