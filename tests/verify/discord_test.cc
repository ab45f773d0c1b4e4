// Tests for discord.cc: X-Signature-Ed25519 (hex) over "<X-Signature-Timestamp><body>",
// checked against the application's public key (64 hex digits). Signed here with RFC 8032's
// first test key; the interop test (tests/interop/discord.test.mjs) checks the scheme
// against discord-interactions' verifyKey.
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "config/secrets.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;
using testing::With;

constexpr int64_t kT = 1'729'262'573;
const std::string kBody =
    R"({"version":1,"application_id":"1234567890123456789","type":1,"event":)"
    R"({"type":"APPLICATION_AUTHORIZED","timestamp":"2024-10-18T14:42:53.064834",)"
    R"("data":{"integration_type":1,"scopes":["applications.commands"]}}})";
const std::string kPublicHex = HexEncode(testing::kEd25519Public);

std::string Signature(const std::string& ts = std::to_string(kT), const std::string& body = kBody,
                      const std::string& seed = testing::kEd25519Seed) {
  return HexEncode(testing::Ed25519Sign(seed, ts + body));
}

Headers Delivery(const std::string& signature, const std::string& ts = std::to_string(kT)) {
  return {{"X-Signature-Ed25519", signature}, {"X-Signature-Timestamp", ts}};
}

std::string Check(const Headers& headers, const std::string& body = kBody, TimePoint now = At(kT),
                  std::vector<std::string> keys = {kPublicHex}) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kDiscord, std::move(keys));
  return Outcome(Verify(endpoint, headers, body, now));
}

TEST_CASE("discord: a valid signature, and either of two keys", "[discord]") {
  CHECK(Check(Delivery(Signature())) == "ok");
  // The header names are case-insensitive; the key may be written in capitals.
  CHECK(Check({{"x-signature-ed25519", Signature()},
               {"x-signature-timestamp", std::to_string(kT)}}) == "ok");
  std::string upper = kPublicHex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(Check(Delivery(Signature()), kBody, At(kT), {upper}) == "ok");
  const std::string other = HexEncode(testing::Ed25519PublicOf(std::string(32, '\x01')));
  CHECK(Check(Delivery(Signature()), kBody, At(kT), {other, kPublicHex}) == "ok");
  CHECK(Check(Delivery(Signature()), kBody, At(kT), {other}) == reason::kMismatch);
}

TEST_CASE("discord: one byte changed in the body, timestamp or signature fails", "[discord]") {
  CHECK(Check(Delivery(Signature()), kBody + " ") == reason::kMismatch);
  CHECK(Check(Delivery(Signature(), std::to_string(kT + 1)), kBody, At(kT)) == reason::kMismatch);
  std::string flipped = Signature();
  flipped[0] = flipped[0] == '0' ? '1' : '0';
  CHECK(Check(Delivery(flipped)) == reason::kMismatch);
  // Signed by another key pair.
  CHECK(Check(Delivery(Signature(std::to_string(kT), kBody, std::string(32, '\x02')))) ==
        reason::kMismatch);
}

TEST_CASE("discord: the timestamp is within tolerance", "[discord]") {
  CHECK(Check(Delivery(Signature()), kBody, At(kT + 301)) == reason::kTimestamp);
  CHECK(Check(Delivery(Signature()), kBody, At(kT - 301)) == reason::kTimestamp);
  CHECK(Check(Delivery(Signature()), kBody, At(kT + 300)) == "ok");
}

TEST_CASE("discord: missing and malformed headers", "[discord]") {
  CHECK(Check({}) == reason::kMissing);
  CHECK(Check({{"X-Signature-Timestamp", std::to_string(kT)}}) == reason::kMissing);
  CHECK(Check({{"X-Signature-Ed25519", Signature()}}) == reason::kMissing);
  CHECK(Check(Delivery("")) == reason::kMissing);
  for (const std::string& bad : std::vector<std::string>{
           Signature().substr(2), Signature() + "00", "zz" + Signature().substr(2),
           Base64Encode(testing::Ed25519Sign(testing::kEd25519Seed, std::to_string(kT) + kBody))}) {
    INFO(bad);
    CHECK(Check(Delivery(bad)) == reason::kMalformed);
  }
  CHECK(Check(Delivery(Signature(), "soon")) == reason::kMalformed);
  CHECK(Check(With(Delivery(Signature()), "X-Signature-Timestamp", "-1")) == reason::kMalformed);
  Headers twice = Delivery(Signature());
  twice.emplace("X-Signature-Ed25519", Signature());
  CHECK(Check(twice) == reason::kMalformed);
}

TEST_CASE("discord: keys are 64 hex digits; hookbox cannot sign", "[discord]") {
  CHECK(config_internal::PublicKeyOf(Provider::kDiscord, kPublicHex));
  CHECK_FALSE(config_internal::PublicKeyOf(Provider::kDiscord, kPublicHex.substr(2)));
  CHECK_FALSE(config_internal::PublicKeyOf(Provider::kDiscord, kPublicHex + "00"));
  CHECK_FALSE(config_internal::PublicKeyOf(Provider::kDiscord, "zz" + kPublicHex.substr(2)));
  CHECK_FALSE(
      config_internal::PublicKeyOf(Provider::kDiscord, Base64Encode(testing::kEd25519Public)));
  Endpoint endpoint = testing::MakeEndpoint(Provider::kDiscord, {kPublicHex});
  CHECK_FALSE(CanSign(endpoint.secrets[0]));
  CHECK(Sign(endpoint, endpoint.secrets[0], kBody, At(kT)).empty());
}

}  // namespace
}  // namespace hookbox
