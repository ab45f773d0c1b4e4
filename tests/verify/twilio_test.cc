// Tests for twilio.cc: X-Twilio-Signature, base64 HMAC-SHA1 (auth token) of the URL Twilio
// called followed by the sorted form fields, or of the URL alone when it carries the JSON
// body's bodySHA256. The two vectors are the ones Twilio's Node SDK tests with; the interop
// test (tests/interop/twilio.test.mjs) checks the rest against that SDK.
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

const std::string kToken = "12345";
const std::string kUrl = "https://mycompany.com/myapp.php";
const std::string kQuery = "foo=1&bar=2";
const std::string kForm =
    "CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1234&From=%2B14158675309&"
    "To=%2B18005551212";
const std::string kFormSignature = "RSOYDt4T1cUTdK1PDd93/VVr8B8=";
const std::string kJson = R"({"property": "value", "boolean": true})";
const std::string kJsonQuery =
    kQuery + "&bodySHA256=0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";
const std::string kJsonSignature = "a9nBmqA0ju/hNViExpshrM61xv4=";

Endpoint Twilio(std::vector<std::string> tokens = {kToken}) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kTwilio, std::move(tokens));
  endpoint.public_url = kUrl;
  return endpoint;
}

Headers Delivery(const std::string& signature) { return {{"X-Twilio-Signature", signature}}; }

std::string Check(const Headers& headers, const std::string& body = kForm,
                  const std::string& query = kQuery, const Endpoint& endpoint = Twilio()) {
  return Outcome(Verify(endpoint, headers, body, At(0), query));
}

std::string Mac(const std::string& text, HashAlgorithm algorithm = HashAlgorithm::kSha1,
                const std::string& key = kToken) {
  return Base64Encode(Hmac(algorithm, key, text));
}

TEST_CASE("twilio: the SDK's published vectors, form and JSON", "[twilio]") {
  CHECK(Check(Delivery(kFormSignature)) == "ok");
  CHECK(Check(Delivery(kJsonSignature), kJson, kJsonQuery) == "ok");
  // The fields' order in the body does not matter: they are sorted.
  CHECK(Check(Delivery(kFormSignature),
              "To=%2B18005551212&Digits=1234&From=%2B14158675309&CallSid=CA1234567890ABCDE&"
              "Caller=%2B14158675309") == "ok");
  // Rotation: either token.
  CHECK(Check(Delivery(kFormSignature), kForm, kQuery, Twilio({"old token", kToken})) == "ok");
}

TEST_CASE("twilio: Sign then Verify, for public_url without a query", "[twilio]") {
  Endpoint endpoint = Twilio();
  const std::string body = "Body=caf%C3%A9+cr%C3%A8me&From=%2B15005550006&MessageSid=SM1";
  Headers headers = Sign(endpoint, endpoint.secrets[0], body, At(0));
  CHECK(headers == Delivery(Mac(kUrl + "Bodycafé crèmeFrom+15005550006MessageSidSM1")));
  CHECK(Check(headers, body, "") == "ok");
}

TEST_CASE("twilio: one byte changed in a form value, the URL or the query fails", "[twilio]") {
  CHECK(Check(Delivery(kFormSignature), kForm + "5") == reason::kMismatch);
  CHECK(Check(Delivery(kFormSignature), kForm + "&Extra=1") == reason::kMismatch);
  CHECK(Check(Delivery(kFormSignature), kForm, "foo=1&bar=3") == reason::kMismatch);
  CHECK(Check(Delivery(kFormSignature), kForm, "") == reason::kMismatch);
  Endpoint other = Twilio();
  other.public_url = "https://mycompany.com/myapp";
  CHECK(Check(Delivery(kFormSignature), kForm, kQuery, other) == reason::kMismatch);
  CHECK(Check(Delivery(kFormSignature), kForm, kQuery, Twilio({"54321"})) == reason::kMismatch);
}

TEST_CASE("twilio: the URL signed with or without its port, as Twilio's SDK accepts", "[twilio]") {
  auto endpoint_at = [](const std::string& url) {
    Endpoint endpoint = Twilio();
    endpoint.public_url = url;
    return endpoint;
  };
  // The SDK's vector, with public_url written with the default port: the same URL.
  CHECK(Check(Delivery(kFormSignature), kForm, kQuery,
              endpoint_at("https://mycompany.com:443/myapp.php")) == "ok");
  // Twilio signed with :443, public_url has none; JSON bodies (the URL alone) too.
  const std::string with_port = "https://mycompany.com:443/myapp.php?" + kQuery;
  CHECK(Check(Delivery(Mac(with_port + "CallSidCA1")), "CallSid=CA1") == "ok");
  CHECK(Check(Delivery(Mac("https://mycompany.com:443/myapp.php?" + kJsonQuery)), kJson,
              kJsonQuery) == "ok");
  // http's default is 80; another port is not the same URL; a port's own spelling stays.
  const std::string plain = "http://h.example/p";
  CHECK(Check(Delivery(Mac("http://h.example:80/p")), "", "", endpoint_at(plain)) == "ok");
  CHECK(Check(Delivery(Mac("http://h.example:443/p")), "", "", endpoint_at(plain)) ==
        reason::kMismatch);
  CHECK(Check(Delivery(Mac("https://mycompany.com:8443/myapp.php?" + kQuery + "CallSidCA1")),
              "CallSid=CA1") == reason::kMismatch);
  const std::string custom = "https://h.example:8443/p";
  CHECK(Check(Delivery(Mac(custom)), "", "", endpoint_at(custom)) == "ok");
  CHECK(Check(Delivery(Mac("https://h.example/p")), "", "", endpoint_at(custom)) == "ok");
  // The port is found after user info and after an IPv6 literal's brackets, before a query.
  CHECK(Check(Delivery(Mac("https://u:p@h.example/p")), "", "",
              endpoint_at("https://u:p@h.example:443/p")) == "ok");
  CHECK(Check(Delivery(Mac("https://[::1]:443/p")), "", "", endpoint_at("https://[::1]/p")) ==
        "ok");
  CHECK(Check(Delivery(Mac("https://h.example:443?a=b:1")), "", "a=b:1",
              endpoint_at("https://h.example")) == "ok");
}

TEST_CASE("twilio: a JSON body must match the bodySHA256 its URL carries", "[twilio]") {
  CHECK(Check(Delivery(kJsonSignature), kJson + " ", kJsonQuery) == reason::kMismatch);
  std::string other_hash = kJsonQuery;
  other_hash.back() = '1';
  CHECK(Check(Delivery(kJsonSignature), kJson, other_hash) == reason::kMismatch);
  // Signed anew over the changed URL, the body still has to match its hash.
  CHECK(Check(Delivery(Mac(kUrl + "?" + other_hash)), kJson, other_hash) == reason::kMismatch);
}

TEST_CASE("twilio: repeated fields sort by value, a repeated value counts once", "[twilio]") {
  const std::string signature = Mac(kUrl + "a1a2b");
  CHECK(Check(Delivery(signature), "a=2&b=&a=1&a=2", "") == "ok");
  CHECK(Check(Delivery(signature), "a=2&a=1&b", "") == "ok");
  CHECK(Check(Delivery(signature), "a=2&a=1", "") == reason::kMismatch);
}

TEST_CASE("twilio: SharedKey webhooks sign with HMAC-SHA256 when the settings say so", "[twilio]") {
  const std::string sha256 = Mac(kUrl + "?" + kQuery + "CallSidCA1", HashAlgorithm::kSha256);
  Headers headers = Delivery(sha256);
  headers.emplace("X-Twilio-Webhooks-Signature-Settings",
                  "key=webhooks_sharedkey_1, algorithm = HMAC_SHA256");
  CHECK(Check(headers, "CallSid=CA1") == "ok");
  // Without the settings the algorithm is SHA-1, and a 32-byte MAC is malformed.
  CHECK(Check(Delivery(sha256), "CallSid=CA1") == reason::kMalformed);
  Headers unknown = Delivery(sha256);
  unknown.emplace("X-Twilio-Webhooks-Signature-Settings", "algorithm=HMAC_MD5");
  CHECK(Check(unknown, "CallSid=CA1") == reason::kMalformed);
  Headers explicit_sha1 = Delivery(kFormSignature);
  explicit_sha1.emplace("X-Twilio-Webhooks-Signature-Settings", "algorithm=hmac_sha1");
  CHECK(Check(explicit_sha1) == "ok");
  // The settings twice: which one was meant is ambiguous.
  Headers twice = headers;
  twice.emplace("X-Twilio-Webhooks-Signature-Settings", "algorithm=HMAC_SHA256");
  CHECK(Check(twice, "CallSid=CA1") == reason::kMalformed);
}

TEST_CASE("twilio: missing and malformed headers", "[twilio]") {
  CHECK(Check({}) == reason::kMissing);
  CHECK(Check(Delivery("")) == reason::kMissing);
  CHECK(Check(Delivery("not base64!")) == reason::kMalformed);
  CHECK(Check(Delivery(kFormSignature.substr(4))) == reason::kMalformed);
  CHECK(Check(Delivery(HexEncode(*Base64Decode(kFormSignature)))) == reason::kMalformed);
  CHECK(Check({{"X-Twilio-Signature", kFormSignature}, {"X-Twilio-Signature", kFormSignature}}) ==
        reason::kMalformed);
}

}  // namespace
}  // namespace hookbox
