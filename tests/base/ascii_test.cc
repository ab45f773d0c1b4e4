// EqualsIgnoringAsciiCase and AsciiLower (base/ascii.h): A-Z fold and nothing else does, the
// lengths must match, and every byte counts (a NUL, bytes past ASCII); and the Headers map's
// order (base/headers.h) holds two names equivalent exactly when they are equal so.
#include "base/ascii.h"

#include <catch2/catch.hpp>
#include <string>

#include "base/headers.h"

using namespace hookbox;

TEST_CASE("EqualsIgnoringAsciiCase: equal once A-Z are folded, and only then") {
  CHECK(EqualsIgnoringAsciiCase("Content-Type", "content-type"));
  CHECK(EqualsIgnoringAsciiCase("CHUNKED", "chunked"));
  CHECK(EqualsIgnoringAsciiCase("", ""));
  CHECK_FALSE(EqualsIgnoringAsciiCase("close", "closed"));
  CHECK_FALSE(EqualsIgnoringAsciiCase("closed", "close"));
  CHECK_FALSE(EqualsIgnoringAsciiCase("Host", "Hosz"));
  // Only letters fold: '@' and '`' sit next to 'A' and 'a', '[' and '{' next to 'Z' and 'z'.
  CHECK_FALSE(EqualsIgnoringAsciiCase("@", "`"));
  CHECK_FALSE(EqualsIgnoringAsciiCase("[", "{"));
  // Bytes past ASCII are compared as they are: no locale's folding.
  CHECK(EqualsIgnoringAsciiCase("caf\xc3\xa9", "CAF\xc3\xa9"));
  CHECK_FALSE(EqualsIgnoringAsciiCase("\xc3\xa9", "\xc3\x89"));
  // A NUL is a byte like any other, not an end.
  CHECK_FALSE(EqualsIgnoringAsciiCase(std::string("Host\0x", 6), std::string("host\0y", 6)));
  CHECK(EqualsIgnoringAsciiCase(std::string("Host\0X", 6), std::string("host\0x", 6)));
  static_assert(EqualsIgnoringAsciiCase("ABC", "abc"));
}

TEST_CASE("AsciiLower: A-Z to a-z, every other byte unchanged") {
  for (int i = 0; i < 256; ++i) {
    const char c = static_cast<char>(i);
    const char expected = i >= 'A' && i <= 'Z' ? static_cast<char>(i + 32) : c;
    CHECK(AsciiLower(c) == expected);
  }
}

TEST_CASE(
    "CaseInsensitiveLess: equivalent exactly when EqualsIgnoringAsciiCase, ordered unsigned") {
  const CaseInsensitiveLess less;
  for (int i = 0; i < 256; ++i) {
    for (int j = 0; j < 256; ++j) {
      const std::string a(1, static_cast<char>(i));
      const std::string b(1, static_cast<char>(j));
      const bool equivalent = !less(a, b) && !less(b, a);
      INFO(i << " " << j);
      REQUIRE(equivalent == EqualsIgnoringAsciiCase(a, b));
      if (!equivalent) {
        REQUIRE(less(a, b) == (static_cast<unsigned char>(AsciiLower(a[0])) <
                               static_cast<unsigned char>(AsciiLower(b[0]))));
      }
    }
  }
  CHECK(less("Content-Length", "content-type"));
  CHECK_FALSE(less("HOST", "host"));
  const Headers h = {{"Content-Type", "application/json"}, {"X-Multi", "1"}, {"x-multi", "2"}};
  CHECK(HeaderValue(h, "content-type") == "application/json");
  CHECK(HeaderCount(h, "X-MULTI") == 2);
  CHECK_FALSE(HeaderValue(h, "Content-Typ"));
}

TEST_CASE("ParseAsciiDigits: 1 to 18 ASCII digits, nothing else") {
  CHECK(ParseAsciiDigits("0") == 0);
  CHECK(ParseAsciiDigits("8080") == 8080);
  CHECK(ParseAsciiDigits("007") == 7);
  CHECK(ParseAsciiDigits("999999999999999999") == 999999999999999999);  // 18 digits
  CHECK_FALSE(ParseAsciiDigits("1000000000000000000"));                 // 19: could overflow
  CHECK_FALSE(ParseAsciiDigits(""));
  CHECK_FALSE(ParseAsciiDigits("-1"));
  CHECK_FALSE(ParseAsciiDigits("+1"));
  CHECK_FALSE(ParseAsciiDigits(" 1"));
  CHECK_FALSE(ParseAsciiDigits("1 "));
  CHECK_FALSE(ParseAsciiDigits("1e3"));
  CHECK_FALSE(ParseAsciiDigits("\xd9\xa1"));  // ARABIC-INDIC DIGIT ONE: not ASCII
}
