// Durations, sizes and listen addresses: the accepted spellings and the rejected ones.

#include <catch2/catch.hpp>

#include "config/config.h"

namespace hookbox {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST_CASE("ParseDuration accepts whole numbers with a unit", "[config][values]") {
  struct Case {
    const char* text;
    Duration want;
  } cases[] = {
      {"0ms", milliseconds(0)}, {"300ms", milliseconds(300)}, {"0s", seconds(0)},
      {"10s", seconds(10)},     {"5m", minutes(5)},           {"2h", hours(2)},
      {"7d", hours(24 * 7)},    {"90s", seconds(90)},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto d = ParseDuration(c.text);
    REQUIRE(d.ok());
    CHECK(*d == c.want);
  }
}

TEST_CASE("ParseDuration rejects everything else", "[config][values]") {
  const char* cases[] = {"",
                         "10",
                         "0",
                         "s",
                         "-5s",
                         "+5s",
                         "1.5s",
                         "10 s",
                         " 10s",
                         "10S",
                         "10sec",
                         "1w",
                         "5mss",
                         "10s ",
                         "9223372036854775807d",
                         "99999999999999999999ms"};
  for (const char* text : cases) {
    INFO(text);
    auto d = ParseDuration(text);
    REQUIRE_FALSE(d.ok());
    CHECK(d.status().what().find("is not a duration") != std::string::npos);
  }
  CHECK(ParseDuration("10").status().what().find("add a unit") != std::string::npos);
}

TEST_CASE("FormatDuration picks the largest exact unit", "[config][values]") {
  CHECK(FormatDuration(seconds(90)) == "90s");
  CHECK(FormatDuration(hours(48)) == "2d");
  CHECK(FormatDuration(minutes(120)) == "2h");
  CHECK(FormatDuration(milliseconds(1500)) == "1500ms");
  CHECK(FormatDuration(milliseconds(0)) == "0s");
}

TEST_CASE("ParseSize accepts bytes and binary or decimal units", "[config][values]") {
  struct Case {
    const char* text;
    size_t want;
  } cases[] = {
      {"0", 0},         {"512", 512},      {"512B", 512},
      {"64KiB", 65536}, {"1MiB", 1 << 20}, {"2GiB", 2ULL << 30},
      {"64KB", 64000},  {"1MB", 1000000},  {"3GB", 3000000000ULL},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto s = ParseSize(c.text);
    REQUIRE(s.ok());
    CHECK(*s == c.want);
  }
}

TEST_CASE("ParseSize rejects everything else", "[config][values]") {
  const char* cases[] = {"",
                         "1XB",
                         "MiB",
                         "-1",
                         "1.5MiB",
                         "1 MiB",
                         "1mib",
                         "1kb",
                         "1TiB",
                         "1K",
                         "1M",
                         "99999999999999999999",
                         "17179869184GiB"};
  for (const char* text : cases) {
    INFO(text);
    auto s = ParseSize(text);
    REQUIRE_FALSE(s.ok());
  }
  CHECK(ParseSize("1XB").status().what() == "\"1XB\" is not a size (use e.g. 64KiB, 1MiB)");
}

TEST_CASE("ParseHostPort", "[config][values]") {
  struct Case {
    const char* text;
    const char* host;
    int port;
  } good[] = {
      {"127.0.0.1:8080", "127.0.0.1", 8080},
      {"0.0.0.0:0", "0.0.0.0", 0},
      {"localhost:65535", "localhost", 65535},
      {"[::1]:9464", "::1", 9464},
      {"[::]:80", "::", 80},
  };
  for (const auto& c : good) {
    INFO(c.text);
    auto hp = ParseHostPort(c.text);
    REQUIRE(hp.ok());
    CHECK(hp->host == c.host);
    CHECK(hp->port == c.port);
  }
  const char* bad[] = {"",        "8080",     ":8080",      "host:", "host:65536",
                       "host:-1", "host:80x", "::1:8080",   "[::1]", "[::1]8080",
                       "[]:80",   "[::1:80",  "host:000080"};
  for (const char* text : bad) {
    INFO(text);
    CHECK_FALSE(ParseHostPort(text).ok());
  }
}

}  // namespace
}  // namespace hookbox
