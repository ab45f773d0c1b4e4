// `allow_from:` and `trusted_proxies:` as the loader reads them (config/config.cc): ranges
// and `file:PATH` entries (one range a line, `#` comments), the top level's list as the
// default of endpoints without their own, and each bad input as one positioned error.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "load_helpers.h"

using namespace hookbox;
using testing::Dump;
using testing::HasLine;
using testing::Load;
using testing::TempFile;

namespace {

std::string Doc(const std::string& top, const std::string& endpoint) {
  return top + R"(
endpoints:
  - name: a
    path: /a
    verify: none
)" + endpoint +
         R"(
  - name: b
    path: /b
    verify: none
)";
}

bool Allows(const Endpoint& ep, const char* address) {
  return ep.allow_from && InAnyRange(*ep.allow_from, *ParseIpAddress(address));
}

}  // namespace

TEST_CASE("allow_from: an endpoint's own list, else the top level's, else none", "[config]") {
  auto none = Load(Doc("", ""));
  REQUIRE(none.config);
  CHECK_FALSE(none.config->endpoints[0].allow_from.has_value());
  CHECK(none.config->trusted_proxies.empty());

  auto r = Load(Doc("allow_from: [192.0.2.0/24, \"2001:db8::/32\"]\ntrusted_proxies: [10.0.0.1]",
                    "    allow_from: [203.0.113.7]"));
  INFO(Dump(r));
  REQUIRE(r.config);
  const Endpoint& a = r.config->endpoints[0];
  const Endpoint& b = r.config->endpoints[1];
  CHECK(Allows(a, "203.0.113.7"));
  CHECK_FALSE(Allows(a, "192.0.2.1"));  // its own list replaces the default, not adds to it
  CHECK(Allows(b, "192.0.2.1"));
  CHECK(Allows(b, "2001:db8::5"));
  CHECK_FALSE(Allows(b, "203.0.113.7"));
  REQUIRE(r.config->trusted_proxies.size() == 1);
  CHECK(r.config->trusted_proxies[0].text == "10.0.0.1");
}

TEST_CASE("allow_from: file entries, with comments and blank lines", "[config]") {
  TempFile ranges(
      "# GitHub hooks, from https://api.github.com/meta\n"
      "192.30.252.0/22   # hooks\n"
      "\n"
      "  2606:50c0::/32\t\n"
      "140.82.112.0/20\r\n");
  auto r = Load(Doc("", "    allow_from: [\"file:" + ranges.path() + "\", 127.0.0.1]"));
  INFO(Dump(r));
  REQUIRE(r.config);
  const Endpoint& a = r.config->endpoints[0];
  REQUIRE(a.allow_from);
  CHECK(a.allow_from->size() == 4);
  CHECK(Allows(a, "192.30.253.1"));
  CHECK(Allows(a, "2606:50c0::1"));
  CHECK(Allows(a, "140.82.127.255"));
  CHECK(Allows(a, "127.0.0.1"));
  CHECK_FALSE(Allows(a, "140.82.128.0"));
}

TEST_CASE("allow_from and trusted_proxies: each bad input, positioned", "[config]") {
  TempFile bad_line("10.0.0.0/8\nnot-a-range\n");
  TempFile empty("# nothing yet\n\n");
  struct Case {
    std::string top, endpoint, message;
  };
  const Case cases[] = {
      {"", "    allow_from: [10.0.0.0/33]",
       "test.yaml:6:18: endpoints[0].allow_from[0]: \"10.0.0.0/33\": the prefix length must be 0 "
       "to 32"},
      {"", "    allow_from: [10.1.0.0/8]", "has bits set past its prefix length"},
      {"allow_from: [example.com]", "", "allow_from[0]: \"example.com\" is not an IP address"},
      {"", "    allow_from: []", "endpoints[0].allow_from: expected a non-empty list"},
      {"", "    allow_from: 10.0.0.0/8", "endpoints[0].allow_from: expected a list"},
      {"trusted_proxies: [\"file:/etc/proxies\"]", "", "trusted_proxies[0]: \"file:/etc/proxies\""},
      {"", "    allow_from: [\"file:relative.txt\"]",
       "file:relative.txt: the path must be absolute"},
      {"", "    allow_from: [\"file:/nonexistent/hookbox-allow\"]",
       "cannot read /nonexistent/hookbox-allow: No such file or directory"},
      {"", "    allow_from: [\"file:" + bad_line.path() + "\"]",
       bad_line.path() + ":2: \"not-a-range\" is not an IP address or range"},
      {"", "    allow_from: [\"file:" + empty.path() + "\"]",
       "endpoints[0].allow_from: allows no address: its files list no range"},
  };
  for (const Case& c : cases) {
    auto r = Load(Doc(c.top, c.endpoint));
    INFO(c.top << c.endpoint << "\n" << Dump(r));
    CHECK_FALSE(r.config.has_value());
    CHECK(HasLine(r.errors, c.message));
  }
}

TEST_CASE("allow_from files are not read by the operator's verbs", "[config]") {
  // No secrets resolved, no host checks: the CLI's load. The file may be the daemon's alone.
  auto r = LoadConfigText(Doc("", "    allow_from: [\"file:/nonexistent/hookbox-allow\"]"),
                          "test.yaml", {.resolve_secrets = false});
  INFO(Dump(r));
  CHECK(r.config.has_value());
}
