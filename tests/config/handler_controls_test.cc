// `rate:` and `circuit:` beside `concurrency:` in every handler kind: what the loader takes,
// what it refuses and says so, and that the kind's factory never sees them.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "config/yaml_reader.h"
#include "load_helpers.h"

namespace {

using namespace hookbox;
using hookbox::testing::Dump;
using hookbox::testing::HasLine;
using hookbox::testing::Load;

// One endpoint (`extra` endpoint keys) with one exec handler carrying `controls`.
std::string WithControls(const std::string& controls, const std::string& extra = "") {
  return "endpoints:\n  - name: e\n    path: /e\n    verify: none\n" + extra +
         "    routes:\n      - events: [\"*\"]\n        handlers:\n"
         "          - exec: {command: [/bin/true]" +
         controls + "}\n";
}

}  // namespace

TEST_CASE("rate and circuit are read for the claim and taken out of the kind's settings",
          "[config]") {
  LoadResult r = Load(WithControls(", rate: 600/min, circuit: {failures: 5, cooldown: 30s}"));
  REQUIRE(r.config);
  const HandlerSpec& h = r.config->endpoints[0].routes[0].handlers[0];
  CHECK(h.rate_per_second == 10);
  CHECK(h.rate_text == "600/min");
  CHECK(h.circuit_failures == 5);
  CHECK(h.circuit_cooldown == std::chrono::seconds(30));
  CHECK_FALSE(h.config->node["rate"]);
  CHECK_FALSE(h.config->node["circuit"]);
  CHECK(h.config->node["command"]);
  CHECK(ParseRate("20/s").ok());
  CHECK(*ParseRate("1/min") == Approx(1.0 / 60));
}

TEST_CASE("rate and circuit values that make no sense are config errors", "[config]") {
  const std::pair<std::string, std::string> cases[] = {
      {", rate: 0/s", "would never run the handler: pause it instead"},
      {", rate: 0.5/s", "is not a rate"},
      {", rate: 5/h", "is not a rate"},
      {", rate: 20", "is not a rate"},
      {", rate: -3/s", "is not a rate"},
      {", rate: 100001/s", "is more than 100000/s"},
      {", rate: 99999999999/s", "is not a rate"},
      {", circuit: {failures: 0, cooldown: 1s}", "circuit.failures"},
      {", circuit: {failures: 1001, cooldown: 1s}", "circuit.failures"},
      {", circuit: {failures: 3, cooldown: 10ms}", "expected 100ms to 24h"},
      {", circuit: {failures: 3, cooldown: 2d}", "expected 100ms to 24h"},
      {", circuit: {failures: 3}", "cooldown"},
      {", circuit: {failures: 3, cooldown: 1s, half: 1}", "unknown key \"half\""},
  };
  for (const auto& [controls, want] : cases) {
    LoadResult r = Load(WithControls(controls));
    INFO(controls << "\n" << Dump(r));
    CHECK_FALSE(r.config);
    CHECK(HasLine(r.errors, want));
  }
  LoadResult sync = Load(WithControls(", rate: 5/s", "    mode: sync\n"));
  CHECK_FALSE(sync.config);
  CHECK(HasLine(sync.errors, "rate and circuit do not apply to mode: sync"));
}
