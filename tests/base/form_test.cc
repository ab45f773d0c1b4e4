// The urlencoded fields of query strings and form bodies, and the encoding of query values.
#include "base/form.h"

#include <catch2/catch.hpp>

using namespace hookbox;

TEST_CASE("ParseUrlEncoded decodes names and values, '+' as space, bad % left as is") {
  FormFields f = ParseUrlEncoded("a=1&b=x+y%20z&&c&d=%zz%4&e=%3C%2fscript%3E&a=2");
  REQUIRE(f.size() == 6);
  CHECK(f[0] == std::pair<std::string, std::string>{"a", "1"});
  CHECK(f[1].second == "x y z");
  CHECK(f[2] == std::pair<std::string, std::string>{"c", ""});
  CHECK(f[3].second == "%zz%4");
  CHECK(f[4].second == "</script>");
  CHECK(FormValue(f, "a") == "1");  // the first of two
  CHECK_FALSE(FormValue(f, "missing").has_value());
  CHECK(ParseUrlEncoded("").empty());
  CHECK(ParseUrlEncoded("=v").at(0).first.empty());
}

TEST_CASE("UrlEncode keeps unreserved bytes and round-trips everything else") {
  CHECK(UrlEncode("abc-._~XYZ09") == "abc-._~XYZ09");
  CHECK(UrlEncode("a b&c=d/é") == "a%20b%26c%3Dd%2F%C3%A9");
  const std::string bytes("\x00\x01\xff\"'<>#?", 9);
  CHECK(FormValue(ParseUrlEncoded("v=" + UrlEncode(bytes)), "v") == bytes);
}
