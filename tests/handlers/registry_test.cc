// Tests for handlers/registry.cc and what every kind's factory shares: the table of kinds,
// and the refusal of configs that are not mappings, repeat a key or hold unknown keys.
#include <catch2/catch.hpp>
#include <filesystem>

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
  // In the loader's words (a kind's settings are read with its reader).
  CHECK(Build("file", "{dir: /tmp, dir: /tmp}").HasError("h: key \"dir\" appears twice"));
}

TEST_CASE("registry: every kind's factory refuses another kind's settings") {
  struct OtherSettings final : KindSettings {};
  const OtherSettings other;
  const std::pair<const char*, const char*> kinds[] = {{"exec", "an exec handler's"},
                                                       {"http", "an http handler's"},
                                                       {"file", "a file handler's"},
                                                       {"sql", "an sql handler's"}};
  for (const auto& [kind, whose] : kinds) {
    INFO(kind);
    std::vector<std::string> errors;
    CHECK(FindHandlerKind(kind)(other, "h", &errors) == nullptr);
    CHECK(errors == std::vector<std::string>{std::string("h: the settings are not ") + whose});
  }
}

TEST_CASE("registry: without host_checks and resolve_secrets a kind looks at nothing outside") {
  // The operator's verbs: their shell's PATH, folders and secrets are not the daemon's.
  const LoadOptions look = {.resolve_secrets = false, .host_checks = false};
  testing::TempDir dir;
  const std::string missing = dir / "not-yet";
  auto exec = Build("exec", "{command: [/nonexistent/prog], workdir: " + missing + "}", look);
  INFO(exec.Errors());
  CHECK(exec.handler != nullptr);
  auto file = Build("file", "{dir: " + missing + "}", look);
  INFO(file.Errors());
  CHECK(file.handler != nullptr);
  CHECK_FALSE(std::filesystem::exists(missing));
  auto http = Build(
      "http", R"({url: "http://127.0.0.1:1/x", sign: {secret: {env: HOOKBOX_TEST_UNSET_SIGN}}})",
      look);
  INFO(http.Errors());
  CHECK(http.handler != nullptr);
  // The shape is still checked.
  CHECK(Build("exec", "{command: [], workdir: relative}", look)
            .HasError("h.workdir: expected an "
                      "absolute path"));
  // And with them (check-config, serve), each is looked at.
  CHECK(Build("exec", "{command: [/nonexistent/prog]}").HasError("is not an executable file"));
  CHECK(Build("http",
              R"({url: "http://127.0.0.1:1/x", sign: {secret: {env: HOOKBOX_TEST_UNSET_SIGN}}})")
            .HasError("h.sign.secret: environment variable HOOKBOX_TEST_UNSET_SIGN is not set"));
}

}  // namespace
}  // namespace hookbox
