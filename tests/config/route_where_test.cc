// A route's `where:` as the loader reads it (config/config.cc, ReadRoutes): each condition
// parsed by the code `inbox list --where` uses (base/field_match.h), and each bad one an
// error at its own line and column, naming what is wrong, with nothing loaded.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "load_helpers.h"

using namespace hookbox;
using testing::Dump;
using testing::HasLine;
using testing::Load;

namespace {

// One endpoint whose first route has `where` (a YAML value, "" for none).
std::string Doc(const std::string& where) {
  return R"(endpoints:
  - name: a
    path: /a
    verify: none
    routes:
      - events: ["invoice.*"]
)" + (where.empty() ? std::string() : "        where: " + where + "\n") +
         R"(        handlers: [{name: billing, file: {dir: /tmp}}]
      - events: ["*"]
        handlers: [{name: audit, file: {dir: /tmp}}]
)";
}

}  // namespace

TEST_CASE("routes[].where: conditions read in order; none means any body", "[config]") {
  auto r = Load(Doc(R"(["/data/object/livemode=true", "form:Body=STOP", "/a~1b/0=x=y"])"));
  INFO(Dump(r));
  REQUIRE(r.config);
  const Route& route = r.config->endpoints[0].routes[0];
  REQUIRE(route.where.size() == 3);
  CHECK(route.where[0].kind == FieldMatch::Kind::kJsonPointer);
  CHECK(route.where[0].tokens == std::vector<std::string>{"data", "object", "livemode"});
  CHECK(route.where[0].value == "true");
  CHECK(route.where[1].kind == FieldMatch::Kind::kForm);
  CHECK(route.where[1].field == "Body");
  CHECK(route.where[2].tokens == std::vector<std::string>{"a/b", "0"});
  CHECK(route.where[2].value == "x=y");
  CHECK(r.config->endpoints[0].routes[1].where.empty());

  auto none = Load(Doc(""));
  REQUIRE(none.config);
  CHECK(none.config->endpoints[0].routes[0].where.empty());
}

TEST_CASE("routes[].where: each bad condition at its line and column", "[config]") {
  struct Case {
    std::string where, message;
  };
  const std::vector<Case> cases = {
      {R"(["/data/object/livemode"])",
       "test.yaml:7:17: endpoints[0].routes[0].where[0]: a condition is POINTER=VALUE or "
       "form:NAME=VALUE, and this has no ="},
      {R"(["/ok=1", "data/livemode=true"])",
       "test.yaml:7:26: endpoints[0].routes[0].where[1]: bad JSON pointer: a JSON "
       "pointer starts with /"},
      {R"(["/a~2=x"])", "endpoints[0].routes[0].where[0]: bad JSON pointer: ~ must be followed"},
      {R"(["form:=x"])", "endpoints[0].routes[0].where[0]: form: needs a field name before ="},
      {R"(["/a=\0"])", "endpoints[0].routes[0].where[0]: the condition is not UTF-8 text"},
      {"[]", "endpoints[0].routes[0].where: expected a non-empty list"},
      {R"("/a=1")", "endpoints[0].routes[0].where: expected a list"},
      {"[{a: 1}]", "endpoints[0].routes[0].where[0]: expected"},
  };
  for (const Case& c : cases) {
    auto r = Load(Doc(c.where));
    INFO(c.where << "\n" << Dump(r));
    CHECK_FALSE(r.config.has_value());
    CHECK(HasLine(r.errors, c.message));
  }
}
