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

TEST_CASE("CountFormFields counts what ParseUrlEncoded returns, without parsing") {
  for (const char* text :
       {"", "a", "a=1&b=2", "&&a&&", "a=1&b=x+y%20z&&c&d=%zz%4&e=&a=2", "&", "=v", "a&b&c&"}) {
    INFO(text);
    CHECK(CountFormFields(text) == ParseUrlEncoded(text).size());
  }
  // At the limit and one over it (twilio refuses more before verifying).
  std::string form = "f=1";
  for (size_t i = 1; i < kMaxFormFields; ++i) form += "&f=1";
  CHECK(CountFormFields(form) == kMaxFormFields);
  CHECK(CountFormFields(form + "&") == kMaxFormFields);
  CHECK(CountFormFields(form + "&g") == kMaxFormFields + 1);
  // A MiB of one-byte fields: counted in one pass.
  std::string huge;
  for (int i = 0; i < 512 * 1024; ++i) huge += "a&";
  CHECK(CountFormFields(huge) == 512u * 1024u);
}
