// A condition on a body as routes' `where:` and `inbox list --where` both read it: the
// parsing and its refusals, the text it is shown as, and FieldMatches on JSON and form
// bodies. (JsonPointerValue's finer points are in tests/inbox/filter_test.cc, beside the
// SQL that shares it; receive/identify_test.cc holds routes to it.)
#include "base/field_match.h"

#include <catch2/catch.hpp>

using namespace hookbox;

TEST_CASE("ParseFieldMatch: the condition of a route or a --where, and its refusals") {
  auto m = ParseFieldMatch("/data/object/a~1b=x=y");
  REQUIRE(m.ok());
  CHECK(m->tokens == std::vector<std::string>{"data", "object", "a/b"});
  CHECK(m->value == "x=y");
  CHECK(FieldMatchText(*m) == "/data/object/a~1b=x=y");
  auto form = ParseFieldMatch("form:Body=hi");
  REQUIRE(form.ok());
  CHECK(form->kind == FieldMatch::Kind::kForm);
  CHECK(FieldMatchText(*form) == "form:Body=hi");
  CHECK_THAT(ParseFieldMatch("/data").status().what(), Catch::Contains("no ="));
  CHECK_THAT(ParseFieldMatch("data=x").status().what(), Catch::Contains("starts with /"));
  CHECK_THAT(ParseFieldMatch("/a~2=x").status().what(), Catch::Contains("~ must be followed"));
  CHECK_THAT(ParseFieldMatch("form:=x").status().what(), Catch::Contains("field name"));
  CHECK_THAT(ParseFieldMatch(std::string("/a=\0", 4)).status().what(), Catch::Contains("UTF-8"));
}

TEST_CASE("FieldMatches: as the SQL matches a stored row") {
  auto match = [](const std::string& condition, std::string_view body) {
    return FieldMatches(body, ParseFieldMatch(condition).value());
  };
  CHECK(match("/a/b=1.50", R"({"a":{"b":1.50}})"));
  CHECK_FALSE(match("/a/b=1.5", R"({"a":{"b":1.50}})"));  // numbers as written
  CHECK(match("/a/0=x", R"({"a":["x"]})"));
  CHECK_FALSE(match("/a=null", R"({"a":null})"));
  CHECK(match("/a=2", R"({"a":1,"a":2})"));           // the last duplicate counts
  CHECK_FALSE(match("/a=1", R"({"a":1} trailing)"));  // one JSON document or nothing
  CHECK(match("form:name=J\u00f6rg", "name=J%C3%B6rg"));
  CHECK(match("form:name=J\u00f6rg", "a=1&name=J%c3%b6rg&b=2"));
  CHECK_FALSE(match("form:name=J", "name=Jo"));
  CHECK_FALSE(match("form:name=J", "aname=J"));
  CHECK(match("form:q=a b", "q=a%20b"));
}
