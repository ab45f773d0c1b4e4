// Tests for verify.cc: dispatch, `verify: none`, and the rules every provider shares.
#include "verify/verify.h"

#include <catch2/catch.hpp>
#include <vector>

#include "tests/verify/testing.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

// The providers hookbox signs for: every row but those whose keys are public keys alone
// (only the producer holds the private key; discord_test.cc signs for those).
std::vector<Provider> Signed() {
  std::vector<Provider> providers;
  for (const ProviderSpec& row : Providers()) {
    if (row.keys != ProviderSpec::Keys::kEd25519Hex) providers.push_back(row.provider);
  }
  return providers;
}

Endpoint MakeFor(Provider provider, std::vector<std::string> secrets) {
  Endpoint endpoint = testing::MakeEndpoint(provider, std::move(secrets));
  endpoint.hmac.header = "X-Signature";
  endpoint.public_url = "https://hooks.example.com/hooks/test";  // square signs it
  return endpoint;
}

// Secrets that every provider accepts (standard needs base64).
const std::string kFirst = "whsec_Zmlyc3Qgc2VjcmV0IGtleSBieXRlcw==";
const std::string kSecond = "whsec_c2Vjb25kIHNlY3JldCBrZXkgYnl0ZXM=";

TEST_CASE("verify: none passes anything", "[verify]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kNone, {});
  CHECK(Outcome(Verify(endpoint, {}, "body", At(0))) == "ok");
  CHECK(Sign(endpoint, {"value", "x"}, "body", At(0)).empty());
}

TEST_CASE("verify: every provider round-trips, with either of two secrets", "[verify]") {
  const std::string body = R"({"id":"evt_1","type":"t"})";
  TimePoint now = At(1'700'000'000);
  for (Provider provider : Signed()) {
    INFO(SpecOf(provider).name);
    Endpoint endpoint = MakeFor(provider, {kFirst, kSecond});
    for (const Secret& secret : endpoint.secrets) {
      Headers headers = Sign(endpoint, secret, body, now, "evt_1", "t");
      CHECK(Outcome(Verify(endpoint, headers, body, now)) == "ok");
    }
    Headers stranger = Sign(endpoint, {"value", "whsec_b3RoZXI="}, body, now, "evt_1", "t");
    CHECK(Outcome(Verify(endpoint, stranger, body, now)) == reason::kMismatch);
    CHECK(Outcome(Verify(endpoint, {}, body, now)) == reason::kMissing);
  }
}

TEST_CASE("verify: no usable secret means no delivery verifies", "[verify]") {
  const std::string body = "{}";
  TimePoint now = At(1'700'000'000);
  for (Provider provider : Signed()) {
    INFO(SpecOf(provider).name);
    Endpoint signer = MakeFor(provider, {kFirst});
    Headers headers = Sign(signer, signer.secrets[0], body, now, "id", "t");
    CHECK(Outcome(Verify(MakeFor(provider, {}), headers, body, now)) == reason::kMismatch);
    CHECK(Outcome(Verify(MakeFor(provider, {""}), headers, body, now)) == reason::kMismatch);
  }
}

TEST_CASE("verify: failures are Unauthenticated about the endpoint", "[verify]") {
  Endpoint endpoint = MakeFor(Provider::kGithub, {kFirst});
  Status status = Verify(endpoint, {{"X-Hub-Signature-256", "sha256=00"}}, "{}", At(0));
  CHECK(status.code() == Status::Code::kUnauthenticated);
  CHECK(status.what() == std::string(reason::kMalformed));
  CHECK(status.ToString() == "malformed signature: test-endpoint");
}

}  // namespace
}  // namespace hookbox
