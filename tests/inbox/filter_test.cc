// The filter's parsing (ParseFilter: every option, every refusal naming its part) and the two
// matching pieces the backends share: the value a JSON pointer selects (JsonPointerValue, the
// SQLite function's body) and the spellings of a form pair. Storage is not involved here;
// reads_test.cc holds List() to the same filter on both backends.
#include "inbox/filter.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace {

using namespace hookbox;
using namespace std::chrono_literals;

const TimePoint kNow = TimePoint(std::chrono::seconds(1'800'000'000));  // 2027-01-15T08:00:00Z

StatusOr<EventFilter> Parse(std::vector<FilterOption> options) {
  return ParseFilter(options, kNow);
}

// The message of a refused filter, which must name the part that was wrong.
std::string Refusal(std::vector<FilterOption> options) {
  auto f = Parse(std::move(options));
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().code() == Status::Code::kInvalidArgument);
  return f.status().ToString();
}

}  // namespace

TEST_CASE("ParseFilter: each option, and none") {
  auto none = Parse({});
  REQUIRE(none.ok());
  CHECK(none->Empty());

  auto f = Parse({{"endpoint", "stripe"},
                  {"status", "dead"},
                  {"type", "invoice.*"},
                  {"handler", "notify"},
                  {"since", "2026-12-01"},
                  {"until", "2026-12-02T08:30:00+01:00"},
                  {"where", "/data/object/customer=cus_123"},
                  {"where", "form:From=+1 555=0"}});
  REQUIRE(f.ok());
  CHECK(f->endpoint == "stripe");
  CHECK(f->status == "dead");
  CHECK(f->type_glob == "invoice.*");
  CHECK(f->handler == "notify");
  CHECK(f->since == "2026-12-01T00:00:00.000Z");
  CHECK(f->until == "2026-12-02T07:30:00.000Z");
  REQUIRE(f->where.size() == 2);
  CHECK(f->where[0].kind == FieldMatch::Kind::kJsonPointer);
  CHECK(f->where[0].field == "/data/object/customer");
  CHECK(f->where[0].tokens == std::vector<std::string>{"data", "object", "customer"});
  CHECK(f->where[0].value == "cus_123");
  CHECK(f->where[1].kind == FieldMatch::Kind::kForm);
  CHECK(f->where[1].field == "From");
  CHECK(f->where[1].value == "+1 555=0");  // split at the first =
}

TEST_CASE("ParseFilter: times are RFC 3339, a date, or an age before now") {
  auto f = Parse({{"since", "3d"}, {"until", "90m"}});
  REQUIRE(f.ok());
  CHECK(f->since == FormatTime(kNow - 72h));
  CHECK(f->until == FormatTime(kNow - 90min));
  CHECK(Parse({{"since", "2h"}})->since == FormatTime(kNow - 2h));
  CHECK(Parse({{"since", "45s"}})->since == FormatTime(kNow - 45s));
  CHECK(Parse({{"since", "2026-12-01T08:00:00.5Z"}})->since == "2026-12-01T08:00:00.500Z");
}

TEST_CASE("ParseFilter: pointers unescape ~1 and ~0, and may name the empty key or an index") {
  auto f = Parse({{"where", "/a~1b/m~0n/~01/0/=x"}});
  REQUIRE(f.ok());
  CHECK(f->where[0].tokens == std::vector<std::string>{"a/b", "m~n", "~1", "0", ""});
  CHECK(f->where[0].value == "x");
  auto empty_value = Parse({{"where", "/a="}});
  REQUIRE(empty_value.ok());
  CHECK(empty_value->where[0].value.empty());
}

TEST_CASE("ParseFilter refuses what it cannot evaluate, naming the part") {
  CHECK_THAT(Refusal({{"colour", "red"}}),
             Catch::Contains("--colour") && Catch::Contains("unknown option"));
  CHECK_THAT(Refusal({{"status", "done"}}),
             Catch::Contains("--status done") && Catch::Contains("unknown status"));
  CHECK_THAT(Refusal({{"since", "yesterday"}}), Catch::Contains("--since yesterday"));
  CHECK_THAT(Refusal({{"until", "2026-13-01"}}), Catch::Contains("--until 2026-13-01"));
  // An age before 1970: beyond what the clock holds (10^11 days overflowed it unchecked).
  CHECK_THAT(Refusal({{"since", "99999999999d"}}), Catch::Contains("--since 99999999999d"));
  CHECK_THAT(Refusal({{"since", "20834d"}}), Catch::Contains("not a time"));  // kNow: day 20833
  CHECK(Parse({{"since", "20000d"}}).ok());
  CHECK_THAT(Refusal({{"since", "2h"}, {"until", "3h"}}),
             Catch::Contains("--since") && Catch::Contains("empty"));
  CHECK_THAT(Refusal({{"since", "2026-12-01"}, {"until", "2026-12-01"}}), Catch::Contains("empty"));
  CHECK_THAT(Refusal({{"where", "/data/object/customer"}}),
             Catch::Contains("--where /data/object/customer") && Catch::Contains("no ="));
  CHECK_THAT(Refusal({{"where", "data/customer=x"}}),
             Catch::Contains("--where data/customer=x") && Catch::Contains("starts with /"));
  CHECK_THAT(Refusal({{"where", "/a~2b=x"}}),
             Catch::Contains("--where /a~2b=x") && Catch::Contains("~ must be followed"));
  CHECK_THAT(Refusal({{"where", "/a~=x"}}), Catch::Contains("~ must be followed"));
  CHECK_THAT(Refusal({{"where", "=x"}}), Catch::Contains("starts with /"));
  CHECK_THAT(Refusal({{"where", "form:=x"}}), Catch::Contains("field name"));
  CHECK_THAT(Refusal({{"endpoint", "a"}, {"endpoint", "b"}}), Catch::Contains("given twice"));
  CHECK_THAT(Refusal({{"where", std::string("/a=x\0y", 6)}}), Catch::Contains("UTF-8"));
  CHECK_THAT(Refusal({{"type", "\xff"}}), Catch::Contains("--type"));
}

TEST_CASE("JsonPointerValue: strings, numbers as written, booleans; nothing else") {
  auto at = [](std::string_view body, const std::string& pointer) {
    auto tokens = ParseJsonPointer(pointer);
    REQUIRE(tokens.ok());
    return JsonPointerValue(body, *tokens);
  };
  const std::string body = R"({"data": {"object": {"customer": "cus_123", "amount": 1.50,
    "count": 12 , "big": 1e2, "paid": true, "void": false, "none": null, "obj": {}, "list": [],
    "items": [{"id": "a"}, {"id": "b"}], "a/b": "slash", "m~n": "tilde", "": "empty",
    "esc": "caf\u00e9 \"q\""}}})";
  CHECK(at(body, "/data/object/customer") == "cus_123");
  CHECK(at(body, "/data/object/amount") == "1.50");
  CHECK(at(body, "/data/object/count") == "12");
  CHECK(at(body, "/data/object/big") == "1e2");
  CHECK(at(body, "/data/object/paid") == "true");
  CHECK(at(body, "/data/object/void") == "false");
  CHECK(at(body, "/data/object/none") == std::nullopt);
  CHECK(at(body, "/data/object/obj") == std::nullopt);
  CHECK(at(body, "/data/object/list") == std::nullopt);
  CHECK(at(body, "/data/object") == std::nullopt);
  CHECK(at(body, "/data/object/items/1/id") == "b");
  CHECK(at(body, "/data/object/items/2/id") == std::nullopt);
  CHECK(at(body, "/data/object/items/01/id") == std::nullopt);
  CHECK(at(body, "/data/object/items/-/id") == std::nullopt);
  CHECK(at(body, "/data/object/items/-1/id") == std::nullopt);
  CHECK(at(body, "/data/object/a~1b") == "slash");
  CHECK(at(body, "/data/object/m~0n") == "tilde");
  CHECK(at(body, "/data/object/") == "empty");
  CHECK(at(body, "/data/object/esc") == "caf\xc3\xa9 \"q\"");
  CHECK(at(body, "/data/missing") == std::nullopt);
  CHECK(at(body, "/data/object/customer/x") == std::nullopt);
  // Of duplicate members the last counts, even when it lacks what an earlier one had.
  CHECK(at(R"({"a": 1, "a": 2})", "/a") == "2");
  CHECK(at(R"({"a": {"b": 1}, "a": {"c": 2}})", "/a/b") == std::nullopt);
  CHECK(at(R"({"a": {"b": 1}, "a": {"b": 3}})", "/a/b") == "3");
}

TEST_CASE("JsonPointerValue: a body that is not JSON selects nothing") {
  auto at = [](std::string_view body) {
    return JsonPointerValue(body, std::vector<std::string>{"a"});
  };
  CHECK(at(R"({"a": "x"})") == "x");
  CHECK(at("") == std::nullopt);
  CHECK(at("a=x&b=y") == std::nullopt);
  CHECK(at(R"({"a": "x"} trailing)") == std::nullopt);
  CHECK(at(R"({"a": "x", "b": tru})") == std::nullopt);  // broken after the member
  CHECK(at(R"({"a": "x", "b": )") == std::nullopt);      // cut short
  CHECK(at("{\"a\": \"\xff\"}") == std::nullopt);        // not UTF-8
  CHECK(at(std::string("{\"a\": \"x\"}\0", 11)) == std::nullopt);
  CHECK(at(R"(["a"])") == std::nullopt);
  CHECK(at(R"("a")") == std::nullopt);
}

TEST_CASE("FormPairSpellings: the ways a form encoder writes one field") {
  CHECK(FormPairSpellings("customer", "cus_123") == std::vector<std::string>{"customer=cus_123"});
  auto spaced = FormPairSpellings("Body", "hi there");
  CHECK(spaced == std::vector<std::string>{"Body=hi+there", "Body=hi%20there"});
  auto plus = FormPairSpellings("From", "+1");
  CHECK(plus == std::vector<std::string>{"From=%2B1", "From=%2b1"});
  auto tilde = FormPairSpellings("k", "a~*");
  // ~ and * each literal or encoded, the hex in either case: a~*, a%7E*, a%7e*, a~%2A, ...
  CHECK(tilde.size() == 7);
  CHECK(std::find(tilde.begin(), tilde.end(), "k=a%7e%2a") != tilde.end());
  auto utf8 = FormPairSpellings("n", "\xc3\xa9");
  CHECK(utf8 == std::vector<std::string>{"n=%C3%A9", "n=%c3%a9"});
}
