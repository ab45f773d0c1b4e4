// Tests for the provider table (config/providers.h) against the schemes of src/verify/: each
// row has its scheme, and what a row says of its scheme is what the scheme does.
#include "config/providers.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "tests/verify/testing.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

Endpoint Signable(const ProviderSpec& row) {
  // A whsec_ secret is a key every signing provider takes (standard needs its prefix).
  Endpoint endpoint = testing::MakeEndpoint(row.provider, {"whsec_Zmlyc3Qgc2VjcmV0IGtleQ=="});
  endpoint.hmac.header = "X-Signature";
  endpoint.public_url = "https://hooks.example.com/hooks/test";
  return endpoint;
}

TEST_CASE("providers: one row per provider, in Provider's order, each named once", "[providers]") {
  std::vector<std::string_view> names;
  for (size_t i = 0; i < Providers().size(); ++i) {
    const ProviderSpec& row = Providers()[i];
    CHECK(static_cast<size_t>(row.provider) == i);
    CHECK(&SpecOf(row.provider) == &row);
    CHECK(std::find(names.begin(), names.end(), row.name) == names.end());
    names.push_back(row.name);
  }
  CHECK(Providers().size() == static_cast<size_t>(Provider::kNone));
  CHECK(SpecOf(Provider::kNone).name == "none");
  CHECK(SpecOf(Provider::kNone).ids[0].empty());
}

TEST_CASE("providers: a row's timestamp is the one its scheme checks against tolerance",
          "[providers]") {
  const std::string body = R"({"id":"evt_1","type":"t","event_id":"e"})";
  const TimePoint signed_at = At(1'700'000'000);
  for (const ProviderSpec& row : Providers()) {
    if (row.keys == ProviderSpec::Keys::kEd25519Hex) continue;  // cannot sign: discord_test
    INFO(row.name);
    const Endpoint endpoint = Signable(row);
    const Headers headers = Sign(endpoint, endpoint.secrets[0], body, signed_at, "id-1", "t");
    REQUIRE(Outcome(Verify(endpoint, headers, body, signed_at)) == "ok");
    const TimePoint late = signed_at + endpoint.tolerance + std::chrono::seconds(1);
    CHECK(Outcome(Verify(endpoint, headers, body, late)) ==
          (row.timestamp.empty() ? "ok" : reason::kTimestamp));
  }
}

TEST_CASE("providers: the rows that need public_url sign it", "[providers]") {
  const std::string body = "a=1";
  for (const ProviderSpec& row : Providers()) {
    if (row.keys == ProviderSpec::Keys::kEd25519Hex) continue;
    INFO(row.name);
    const Endpoint endpoint = Signable(row);
    Endpoint moved = endpoint;
    moved.public_url = "https://elsewhere.example.com/hooks/test";
    const Headers headers = Sign(endpoint, endpoint.secrets[0], body, At(100), "id-1", "t");
    CHECK(Outcome(Verify(moved, headers, body, At(100))) ==
          (row.needs_public_url ? reason::kMismatch : "ok"));
  }
}

}  // namespace
}  // namespace hookbox
