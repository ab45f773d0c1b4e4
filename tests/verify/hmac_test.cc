// Tests for hmac.cc, the generic scheme.
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

const std::string kBody = R"({"event":"thing.happened"})";
const std::string kSecret = "generic-secret";

Endpoint MakeHmacEndpoint(std::string algorithm, std::string encoding, std::string prefix,
                          std::vector<std::string> secrets = {kSecret}) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kHmac, std::move(secrets));
  endpoint.hmac = {"X-Signature", std::move(algorithm), std::move(encoding), std::move(prefix)};
  return endpoint;
}

std::string Check(const Endpoint& endpoint, const std::string& value) {
  return Outcome(Verify(endpoint, {{"X-Signature", value}}, kBody, At(1'700'000'000)));
}

TEST_CASE("hmac: every algorithm and encoding round-trips", "[hmac]") {
  for (const auto& [name, algorithm] :
       {std::pair{"sha1", HashAlgorithm::kSha1}, std::pair{"sha256", HashAlgorithm::kSha256},
        std::pair{"sha512", HashAlgorithm::kSha512}}) {
    for (const char* encoding : {"hex", "base64"}) {
      for (const char* prefix : {"", "sha=", "v1 "}) {
        INFO(name << " " << encoding << " '" << prefix << "'");
        Endpoint endpoint = MakeHmacEndpoint(name, encoding, prefix);
        Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(0), "id", "type");
        REQUIRE(headers.size() == 1);
        std::string mac = Hmac(algorithm, kSecret, kBody);
        std::string encoded = std::string(encoding) == "hex" ? HexEncode(mac) : Base64Encode(mac);
        CHECK(testing::First(headers, "X-Signature") == prefix + encoded);
        CHECK(Outcome(Verify(endpoint, headers, kBody, At(0))) == "ok");
        CHECK(Outcome(Verify(endpoint, headers, kBody + " ", At(0))) == reason::kMismatch);
      }
    }
  }
}

TEST_CASE("hmac: rotation", "[hmac]") {
  Endpoint endpoint = MakeHmacEndpoint("sha256", "hex", "", {"old", "new"});
  CHECK(Check(endpoint, HexEncode(Hmac(HashAlgorithm::kSha256, "new", kBody))) == "ok");
  CHECK(Check(endpoint, HexEncode(Hmac(HashAlgorithm::kSha256, "x", kBody))) == reason::kMismatch);
}

TEST_CASE("hmac: prefix, length and encoding are enforced", "[hmac]") {
  Endpoint endpoint = MakeHmacEndpoint("sha256", "hex", "sha256=");
  std::string hex = HexEncode(Hmac(HashAlgorithm::kSha256, kSecret, kBody));
  CHECK(Check(endpoint, "sha256=" + hex) == "ok");
  CHECK(Outcome(Verify(endpoint, {}, kBody, At(0))) == reason::kMissing);
  CHECK(Check(endpoint, "") == reason::kMissing);
  for (const std::string& bad : std::vector<std::string>{
           hex,  // prefix missing
           "SHA256=" + hex,
           "sha256=",
           "sha256=" + hex.substr(1),
           "sha256=" + hex.substr(0, 40),  // a SHA-1-sized MAC
           "sha256=" + hex + hex,          // a SHA-512-sized MAC
           "sha256=" + Base64Encode(Hmac(HashAlgorithm::kSha256, kSecret, kBody)),
           "sha256=" + hex + " ",
       }) {
    INFO(bad);
    CHECK(Check(endpoint, bad) == reason::kMalformed);
  }

  Endpoint b64 = MakeHmacEndpoint("sha512", "base64", "");
  std::string mac = Base64Encode(Hmac(HashAlgorithm::kSha512, kSecret, kBody));
  CHECK(Check(b64, mac) == "ok");
  CHECK(Check(b64, mac.substr(0, mac.size() - 2)) == reason::kMalformed);
  CHECK(Check(b64, HexEncode(Hmac(HashAlgorithm::kSha512, kSecret, kBody))) == reason::kMalformed);
}

TEST_CASE("hmac: a scheme config validation should have refused never verifies", "[hmac]") {
  std::string hex = HexEncode(Hmac(HashAlgorithm::kSha256, kSecret, kBody));
  CHECK(Check(MakeHmacEndpoint("md5", "hex", ""), hex) == reason::kMismatch);
  CHECK(Check(MakeHmacEndpoint("sha256", "base32", ""), hex) == reason::kMismatch);
  Endpoint no_header = MakeHmacEndpoint("sha256", "hex", "");
  no_header.hmac.header.clear();
  CHECK(Outcome(Verify(no_header, {{"X-Signature", hex}}, kBody, At(0))) == reason::kMissing);
  CHECK(Sign(no_header, no_header.secrets[0], kBody, At(0)).empty());
}

}  // namespace
}  // namespace hookbox
