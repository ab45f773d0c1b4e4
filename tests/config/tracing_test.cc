// `tracing:` as the loader reads it (config/config.cc): the OTLP collector's URL, checked at
// load, /v1/traces added to one without a path, the service name, and each bad value as one
// positioned error.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "load_helpers.h"

using namespace hookbox;
using testing::Dump;
using testing::HasLine;
using testing::Load;

namespace {

LoadResult WithTracing(const std::string& tracing) {
  return Load(tracing + R"(
endpoints:
  - name: a
    path: /a
    verify: none
)");
}

}  // namespace

TEST_CASE("tracing: off unless otlp names a collector", "[config]") {
  auto none = WithTracing("");
  REQUIRE(none.config);
  CHECK(none.config->tracing.otlp.empty());
  CHECK(none.config->tracing.service_name == "hookbox");
}

TEST_CASE("tracing.otlp: a URL without a path gets OTLP/HTTP's /v1/traces", "[config]") {
  auto bare = WithTracing("tracing: {otlp: \"http://127.0.0.1:4318\"}");
  REQUIRE(bare.config);
  CHECK(bare.config->tracing.otlp == "http://127.0.0.1:4318/v1/traces");
  auto slash = WithTracing("tracing: {otlp: \"https://collector.internal/\"}");
  REQUIRE(slash.config);
  CHECK(slash.config->tracing.otlp == "https://collector.internal/v1/traces");
  // A path of its own is the operator's: a gateway may route by it.
  auto own = WithTracing(
      "tracing:\n  otlp: \"http://[::1]:4318/otel/traces\"\n  service_name: hookbox-eu\n");
  REQUIRE(own.config);
  CHECK(own.config->tracing.otlp == "http://[::1]:4318/otel/traces");
  CHECK(own.config->tracing.service_name == "hookbox-eu");
}

TEST_CASE("tracing: bad values are errors at their line", "[config]") {
  auto scheme = WithTracing("tracing: {otlp: \"grpc://collector:4317\"}");
  CHECK_FALSE(scheme.config);
  INFO(Dump(scheme));
  CHECK(HasLine(scheme.errors, "test.yaml:1:11"));
  CHECK(HasLine(scheme.errors,
                "tracing.otlp: \"grpc://collector:4317\" is not an http(s) URL "
                "(must start with http:// or https://)"));
  auto credentials = WithTracing("tracing: {otlp: \"http://user:pw@collector:4318\"}");
  CHECK_FALSE(credentials.config);
  CHECK(HasLine(credentials.errors, "no user:password@"));
  auto empty = WithTracing("tracing: {otlp: \"\", service_name: \"\"}");
  CHECK_FALSE(empty.config);
  CHECK(empty.errors.size() == 2);
  auto unknown = WithTracing("tracing: {otlp: \"http://c:4318\", sample: 0.5}");
  CHECK_FALSE(unknown.config);
  CHECK(HasLine(unknown.errors, "tracing: unknown key \"sample\""));
  INFO(Dump(unknown));
}
