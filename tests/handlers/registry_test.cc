// Tests for handlers/registry.cc and what every kind's factory shares: the table of kinds,
// and the refusal of configs that are not mappings, repeat a key or hold unknown keys.
#include <catch2/catch.hpp>

#include "tests/handlers/testing.h"

namespace hookbox {
namespace {

using testing::Build;

TEST_CASE("registry: the four kinds, and nothing else") {
  for (const char* kind : {"exec", "http", "file", "sql"}) CHECK(FindHandlerKind(kind) != nullptr);
  CHECK(FindHandlerKind("nope") == nullptr);
  CHECK(FindHandlerKind("") == nullptr);
  CHECK(HandlerKinds() == std::vector<std::string>{"exec", "http", "file", "sql"});
  CHECK(std::string(OutcomeName(Outcome::kTimeout)) == "timeout");
}

TEST_CASE("registry: every kind refuses non-mappings, repeated and unknown keys") {
  for (const std::string& kind : HandlerKinds()) {
    INFO(kind);
    for (const char* yaml : {"[1, 2]", "text", "~"}) {
      auto built = Build(kind, yaml);
      CHECK(built.handler == nullptr);
      CHECK(built.HasError("h: expected a mapping"));
    }
    auto built = Build(kind, "{bogus: 1}");
    CHECK(built.handler == nullptr);
    CHECK(built.HasError("h: unknown key \"bogus\""));
  }
  CHECK(Build("file", "{dir: /tmp, dir: /tmp}").HasError("h.dir: appears twice"));
}

}  // namespace
}  // namespace hookbox
