// Tests for shopify.cc.
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

const std::string kBody = R"({"id":820982911946154508,"email":"jon@example.com"})";
const std::string kSecret = "shpss_test";

std::string Mac(const std::string& secret = kSecret) {
  return Base64Encode(Hmac(HashAlgorithm::kSha256, secret, kBody));
}

std::string Check(const Headers& headers) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kShopify, {kSecret});
  return Outcome(Verify(endpoint, headers, kBody, At(1'700'000'000)));
}

TEST_CASE("shopify: Sign then Verify", "[shopify]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kShopify, {kSecret});
  Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(0), "ev-1", "orders/create");
  CHECK(testing::First(headers, "X-Shopify-Hmac-Sha256") == Mac());
  CHECK(testing::First(headers, "X-Shopify-Event-Id") == "ev-1");
  CHECK(testing::First(headers, "X-Shopify-Topic") == "orders/create");
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(0))) == "ok");
  CHECK(Outcome(Verify(endpoint, headers, kBody + "\n", At(0))) == reason::kMismatch);
  CHECK(Sign(endpoint, endpoint.secrets[0], kBody, At(0)).size() == 1);
}

TEST_CASE("shopify: rotation", "[shopify]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kShopify, {"old", "new"});
  CHECK(Outcome(Verify(endpoint, {{"X-Shopify-Hmac-Sha256", Mac("new")}}, kBody, At(0))) == "ok");
  CHECK(Outcome(Verify(endpoint, {{"X-Shopify-Hmac-Sha256", Mac("x")}}, kBody, At(0))) ==
        reason::kMismatch);
}

TEST_CASE("shopify: missing and malformed", "[shopify]") {
  CHECK(Check({}) == reason::kMissing);
  CHECK(Check({{"X-Shopify-Hmac-Sha256", ""}}) == reason::kMissing);
  std::string mac = Mac();
  for (const std::string& bad : std::vector<std::string>{
           HexEncode(Hmac(HashAlgorithm::kSha256, kSecret, kBody)),  // hex, not base64
           mac.substr(0, mac.size() - 1),                            // padding cut
           mac + "=",
           mac.substr(4),
           mac + "AAAA",
           " " + mac,
           mac + " ",
           mac.substr(0, 8) + " " + mac.substr(8),
           mac.substr(0, 8) + "\n" + mac.substr(8),
           "sha256=" + mac,
           "!!!!",
           std::string(10000, 'A'),
       }) {
    INFO(bad);
    CHECK(Check({{"X-Shopify-Hmac-Sha256", bad}}) == reason::kMalformed);
  }
}

}  // namespace
}  // namespace hookbox
