// IP addresses and ranges (base/ip_range.h): what parses and what is refused with which
// words, IPv4 as IPv4-mapped IPv6 (so a dual-stack listener's ::ffff:a.b.c.d matches an
// IPv4 range), and containment at every kind of prefix boundary.
#include "base/ip_range.h"

#include <catch2/catch.hpp>

using namespace hookbox;

namespace {

bool In(std::string_view range, std::string_view address) {
  auto r = ParseIpRange(range);
  REQUIRE(r.ok());
  auto a = ParseIpAddress(address);
  REQUIRE(a.has_value());
  return r->Contains(*a);
}

}  // namespace

TEST_CASE("ParseIpAddress: IPv4, IPv6, the mapped form; nothing else") {
  CHECK(ParseIpAddress("192.0.2.1") == ParseIpAddress("::ffff:192.0.2.1"));
  CHECK(ParseIpAddress("::1").has_value());
  CHECK(ParseIpAddress("fe80::1%eth0") == ParseIpAddress("fe80::1"));
  for (const char* bad : {"", "example.com", "192.0.2.1:443", "[::1]", " 192.0.2.1", "192.0.2.256",
                          "1.2.3", "::1::2", "192.0.2.1/32"}) {
    INFO(bad);
    CHECK_FALSE(ParseIpAddress(bad).has_value());
  }
}

TEST_CASE("ParseIpRange: a range or one address; a bad one says why") {
  CHECK(ParseIpRange("10.0.0.0/8")->prefix == 96 + 8);
  CHECK(ParseIpRange("192.0.2.7")->prefix == 128);  // one IPv4 address: /32
  CHECK(ParseIpRange("2001:db8::/32")->prefix == 32);
  CHECK(ParseIpRange("::1")->prefix == 128);
  CHECK(ParseIpRange("0.0.0.0/0")->prefix == 96);
  CHECK(ParseIpRange("10.0.0.0/8")->text == "10.0.0.0/8");

  auto host = ParseIpRange("example.com");
  REQUIRE_FALSE(host.ok());
  CHECK(host.status().what() ==
        "\"example.com\" is not an IP address or range (e.g. 192.0.2.0/24, 2001:db8::/32)");
  for (const char* prefix : {"10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/", "10.0.0.0/8x",
                             "2001:db8::/129", "10.0.0.0/ 8"}) {
    INFO(prefix);
    auto r = ParseIpRange(prefix);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().what().find("the prefix length must be 0 to") != std::string::npos);
  }
  // Bits past the prefix: most likely a typo; refused rather than widened.
  auto typo = ParseIpRange("10.1.0.0/8");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.status().what().find("has bits set past its prefix length") != std::string::npos);
  CHECK_FALSE(ParseIpRange("2001:db8::1/64").ok());
  CHECK_FALSE(ParseIpRange("fe80::/10%eth0").ok());
}

TEST_CASE("IpRange::Contains: prefix boundaries, both families, the mapped form") {
  CHECK(In("10.0.0.0/8", "10.255.255.255"));
  CHECK_FALSE(In("10.0.0.0/8", "11.0.0.0"));
  CHECK(In("192.0.2.0/25", "192.0.2.127"));
  CHECK_FALSE(In("192.0.2.0/25", "192.0.2.128"));
  CHECK(In("192.0.2.7", "192.0.2.7"));
  CHECK_FALSE(In("192.0.2.7", "192.0.2.6"));
  CHECK(In("10.0.0.0/8", "::ffff:10.1.2.3"));  // a dual-stack listener's view of 10.1.2.3
  CHECK(In("0.0.0.0/0", "203.0.113.9"));
  CHECK_FALSE(In("0.0.0.0/0", "2001:db8::1"));  // all of IPv4 is not all of IPv6
  CHECK(In("::/0", "203.0.113.9"));
  CHECK(In("2001:db8::/32", "2001:db8:ffff::1"));
  CHECK_FALSE(In("2001:db8::/32", "2001:db9::1"));
  CHECK(In("2001:db8::/33", "2001:db8:7fff::1"));
  CHECK_FALSE(In("2001:db8::/33", "2001:db8:8000::1"));
  CHECK(In("::1", "::1"));
  CHECK_FALSE(In("::1", "127.0.0.1"));

  std::vector<IpRange> ranges{*ParseIpRange("10.0.0.0/8"), *ParseIpRange("::1")};
  CHECK(InAnyRange(ranges, *ParseIpAddress("::1")));
  CHECK(InAnyRange(ranges, *ParseIpAddress("10.9.9.9")));
  CHECK_FALSE(InAnyRange(ranges, *ParseIpAddress("127.0.0.1")));
  CHECK_FALSE(InAnyRange({}, *ParseIpAddress("127.0.0.1")));
}
