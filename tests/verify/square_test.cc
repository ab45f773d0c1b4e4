// Tests for square.cc: x-square-hmacsha256-signature, base64 HMAC-SHA256 keyed with the
// subscription's signature key over public_url (+ "?" + the request's query) + body. The
// first vector is the one Square's Node SDK tests WebhooksHelper with; the interop test
// (tests/interop/square.test.mjs) checks the rest against that SDK.
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

const std::string kUrl = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9";
const std::string kKey = "Ibxx_5AKakO-3qeNVR61Dw";
const std::string kBody =
    R"({"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification",)"
    R"("event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f",)"
    R"("created_at":"2022-07-13T20:30:59.037339943Z",)"
    R"("data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}})";
const std::string kPublished = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=";

Endpoint Square(std::vector<std::string> keys = {kKey}, const std::string& url = kUrl) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kSquare, std::move(keys));
  endpoint.public_url = url;
  return endpoint;
}

Headers Delivery(const std::string& signature) {
  return {{"x-square-hmacsha256-signature", signature}};
}

std::string Check(const Headers& headers, const Endpoint& endpoint = Square(),
                  const std::string& body = kBody, std::string_view query = {}) {
  return Outcome(Verify(endpoint, headers, body, At(0), query));
}

std::string Mac(const std::string& message, const std::string& key = kKey) {
  return Base64Encode(Hmac(HashAlgorithm::kSha256, key, message));
}

TEST_CASE("square: the SDK's published vector, and Sign then Verify", "[square]") {
  CHECK(Check(Delivery(kPublished)) == "ok");
  Endpoint endpoint = Square();
  Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(0), "evt", "t");
  CHECK(headers == Delivery(kPublished));
  // Header names are case-insensitive, as Square sends X-Square-HmacSha256-Signature.
  CHECK(Check({{"X-Square-HmacSha256-Signature", kPublished}}) == "ok");
  // Rotation: either configured key verifies.
  CHECK(Check(Delivery(kPublished), Square({"an older key", kKey})) == "ok");
}

TEST_CASE("square: the query the request arrived with is part of the signed URL", "[square]") {
  const std::string query = "tenant=a%20b&x=1";
  const std::string signed_with_query = Mac(kUrl + "?" + query + kBody);
  CHECK(Check(Delivery(signed_with_query), Square(), kBody, query) == "ok");
  // Without the query, or with another one, the URL differs: refused.
  CHECK(Check(Delivery(signed_with_query)) == "signature mismatch");
  CHECK(Check(Delivery(signed_with_query), Square(), kBody, "tenant=a+b&x=1") ==
        "signature mismatch");
  CHECK(Check(Delivery(kPublished), Square(), kBody, query) == "signature mismatch");
}

TEST_CASE("square: one byte changed in the body, URL, signature or key fails", "[square]") {
  CHECK(Check(Delivery(kPublished), Square(), kBody + " ") == "signature mismatch");
  CHECK(Check(Delivery(kPublished), Square({kKey}, kUrl + "/")) == "signature mismatch");
  CHECK(Check(Delivery(kPublished), Square({kKey}, "http" + kUrl.substr(5))) ==
        "signature mismatch");
  std::string flipped = kPublished;
  flipped[0] = flipped[0] == 'G' ? 'H' : 'G';
  CHECK(Check(Delivery(flipped)) == "signature mismatch");
  CHECK(Check(Delivery(kPublished), Square({"another key"})) == "signature mismatch");
}

TEST_CASE("square: missing and malformed headers", "[square]") {
  CHECK(Check({}) == "missing signature");
  CHECK(Check(Delivery("")) == "missing signature");
  CHECK(Check(Delivery("not base64!")) == "malformed signature");
  CHECK(Check(Delivery(kPublished.substr(4))) == "malformed signature");  // short MAC
  CHECK(Check(Delivery(HexEncode(Hmac(HashAlgorithm::kSha256, kKey, kUrl + kBody)))) ==
        "malformed signature");  // hex, not base64
  CHECK(Check({{"x-square-hmacsha256-signature", kPublished},
               {"x-square-hmacsha256-signature", kPublished}}) == "malformed signature");
}

TEST_CASE("square: Verified::body is the body where Square split its message", "[square]") {
  const std::string query = "token=abc";
  const Headers headers = Delivery(Mac(kUrl + "?" + query + kBody));
  const Endpoint square = Square();
  const Verifier verifier(square);
  // Every split of the one signed text verifies, and gives Square's body back.
  for (const auto& [q, body] : {std::pair{query, kBody}, std::pair{query + "{", kBody.substr(1)},
                                std::pair{std::string("token=ab"), "c" + kBody},
                                std::pair{std::string(), "?" + query + kBody},
                                std::pair{query + kBody.substr(0, kBody.find("\"data\":") + 7),
                                          kBody.substr(kBody.find("\"data\":") + 7)}}) {
    INFO(q << " | " << body);
    Verified verified;
    REQUIRE(verifier.Verify(headers, body, At(0), q, verified).ok());
    CHECK(verified.signed_message == kUrl + "?" + query + kBody);
    CHECK(verified.body == kBody);
    CHECK(verified.id_header.empty());
  }
  // No '{' after public_url: no body of Square's; the request's own is kept.
  Verified plain;
  REQUIRE(verifier.Verify(Delivery(Mac(kUrl + "?a=1plain")), "plain", At(0), "a=1", plain).ok());
  CHECK(plain.body == "plain");
  // Another provider: the body as it came, and no signed message.
  Endpoint stripe = testing::MakeEndpoint(Provider::kStripe, {"whsec_x"});
  Verified none;
  const Headers stripe_signed = Sign(stripe, stripe.secrets[0], "x{y", At(0), "evt", "t");
  REQUIRE(Verifier(stripe).Verify(stripe_signed, "x{y", At(0), "", none).ok());
  CHECK(none.body == "x{y");
  CHECK(none.signed_message.empty());
}

}  // namespace
}  // namespace hookbox
