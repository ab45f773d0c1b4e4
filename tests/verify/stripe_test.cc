// Tests for stripe.cc.
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;
using testing::With;

constexpr int64_t kT = 1'700'000'000;
const std::string kBody = R"({"id":"evt_1","type":"invoice.paid"})";
const std::string kSecret = "whsec_stripe_test";

std::string V1(int64_t t, const std::string& secret = kSecret, const std::string& body = kBody) {
  return HexEncode(Hmac(HashAlgorithm::kSha256, secret, std::to_string(t) + "." + body));
}

std::string Check(const std::string& header_value, TimePoint now = At(kT)) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStripe, {kSecret});
  return Outcome(Verify(endpoint, {{"Stripe-Signature", header_value}}, kBody, now));
}

TEST_CASE("stripe: Sign then Verify", "[stripe]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStripe, {kSecret});
  Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(kT), "evt_1", "invoice.paid");
  CHECK(testing::First(headers, "Stripe-Signature") == "t=1700000000,v1=" + V1(kT));
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(kT))) == "ok");
  CHECK(Outcome(Verify(endpoint, headers, kBody + "x", At(kT))) == reason::kMismatch);
}

TEST_CASE("stripe: any configured secret verifies (rotation)", "[stripe]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStripe, {"whsec_old", "whsec_new"});
  Headers signed_new = Sign(endpoint, endpoint.secrets[1], kBody, At(kT));
  Headers signed_old = Sign(endpoint, endpoint.secrets[0], kBody, At(kT));
  CHECK(Outcome(Verify(endpoint, signed_new, kBody, At(kT))) == "ok");
  CHECK(Outcome(Verify(endpoint, signed_old, kBody, At(kT))) == "ok");
  Headers signed_other = Sign(endpoint, {"value", "whsec_other"}, kBody, At(kT));
  CHECK(Outcome(Verify(endpoint, signed_other, kBody, At(kT))) == reason::kMismatch);
  // The key is the whole string: without its whsec_ prefix it is another key.
  Headers signed_bare = Sign(endpoint, {"value", "new"}, kBody, At(kT));
  CHECK(Outcome(Verify(endpoint, signed_bare, kBody, At(kT))) == reason::kMismatch);
}

TEST_CASE("stripe: timestamp tolerance, both directions", "[stripe]") {
  std::string header = "t=" + std::to_string(kT) + ",v1=" + V1(kT);
  CHECK(Check(header, At(kT + 300)) == "ok");
  CHECK(Check(header, At(kT + 300) + std::chrono::milliseconds(999)) == "ok");
  CHECK(Check(header, At(kT + 301)) == reason::kTimestamp);
  CHECK(Check(header, At(kT - 300)) == "ok");
  CHECK(Check(header, At(kT - 301)) == reason::kTimestamp);
  CHECK(Check(header, At(0)) == reason::kTimestamp);

  Endpoint strict = testing::MakeEndpoint(Provider::kStripe, {kSecret});
  strict.tolerance = std::chrono::seconds(10);
  Headers headers = {{"Stripe-Signature", header}};
  CHECK(Outcome(Verify(strict, headers, kBody, At(kT + 10))) == "ok");
  CHECK(Outcome(Verify(strict, headers, kBody, At(kT + 11))) == reason::kTimestamp);
}

TEST_CASE("stripe: element order, several v1, other schemes", "[stripe]") {
  std::string t = std::to_string(kT);
  std::string good = V1(kT);
  std::string other = V1(kT, "whsec_other");
  CHECK(Check("v1=" + good + ",t=" + t) == "ok");
  CHECK(Check("t=" + t + ",v1=" + other + ",v1=" + good) == "ok");
  CHECK(Check("t=" + t + ",v1=" + good + ",v1=" + other) == "ok");
  CHECK(Check("t=" + t + ",v0=" + other + ",v1=" + good) == "ok");
  CHECK(Check("t=" + t + ",v1=" + good + ",v0=nothex") == "ok");
  CHECK(Check("t=" + t + ",v1=" + other) == reason::kMismatch);
  CHECK(Check("t=" + t + ",v0=" + good) == reason::kMalformed);  // no v1 at all
  std::string upper = good;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  CHECK(Check("t=" + t + ",v1=" + upper) == "ok");
  // A v1 signed for another timestamp does not carry over.
  CHECK(Check("t=" + std::to_string(kT + 1) + ",v1=" + good) == reason::kMismatch);
}

TEST_CASE("stripe: missing and malformed headers", "[stripe]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStripe, {kSecret});
  CHECK(Outcome(Verify(endpoint, {}, kBody, At(kT))) == reason::kMissing);
  CHECK(Outcome(Verify(endpoint, {{"X-Other", "t=1"}}, kBody, At(kT))) == reason::kMissing);
  CHECK(Check("") == reason::kMissing);

  std::string t = std::to_string(kT);
  std::string good = V1(kT);
  for (const std::string& bad : std::vector<std::string>{
           "t=" + t,                                  // no v1
           "v1=" + good,                              // no t
           std::string("t"),                          // no '='
           "t" + t + ",v1" + good,                    // neither has '='
           "t=,v1=" + good,                           // empty t
           "t=" + t + ",v1=",                         // empty v1
           "t=" + t + ",v1=" + good.substr(1),        // odd-length hex
           "t=" + t + ",v1=" + good.substr(2),        // 31 bytes
           "t=" + t + ",v1=" + good + "00",           // 33 bytes
           "t=" + t + ",v1=" + std::string(64, 'g'),  // not hex
           "t=" + t + ",v1=0x" + good.substr(2),
           "t=abc,v1=" + good,
           "t=-" + t + ",v1=" + good,
           "t=+" + t + ",v1=" + good,
           "t=" + t + ".5,v1=" + good,
           "t=99999999999999999999,v1=" + good,   // would overflow
           "t=" + t + ",t=" + t + ",v1=" + good,  // duplicate t
           "t=" + t + ", v1=" + good,             // whitespace
           "t= " + t + ",v1=" + good,
           "t=" + t + ",v1=" + good + " ",
           "t=" + t + ",v1=" + good + ",",  // trailing comma
           ",t=" + t + ",v1=" + good,
           "t=" + t + ",,v1=" + good,
           "T=" + t + ",v1=" + good,  // names are lowercase
           "=" + t + ",v1=" + good,
       }) {
    INFO(bad);
    CHECK(Check(bad) == reason::kMalformed);
  }
}

TEST_CASE("stripe: oversized and repeated headers are malformed", "[stripe]") {
  std::string t = std::to_string(kT);
  std::string good = V1(kT);
  CHECK(Check("t=" + t + ",v1=" + good + ",v0=" + std::string(10000, 'a')) == reason::kMalformed);
  std::string many = "t=" + t;
  for (int i = 0; i < 17; ++i) many += ",v1=" + good;
  CHECK(Check(many) == reason::kMalformed);
  std::string sixteen = "t=" + t;
  for (int i = 0; i < 16; ++i) sixteen += ",v1=" + good;
  CHECK(Check(sixteen) == "ok");

  Endpoint endpoint = testing::MakeEndpoint(Provider::kStripe, {kSecret});
  Headers twice = {{"Stripe-Signature", "t=" + t + ",v1=" + good},
                   {"stripe-signature", "t=" + t + ",v1=" + good}};
  CHECK(Outcome(Verify(endpoint, twice, kBody, At(kT))) == reason::kMalformed);
}

TEST_CASE("stripe: header names are case-insensitive", "[stripe]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStripe, {kSecret});
  Headers headers = {{"stripe-signature", "t=" + std::to_string(kT) + ",v1=" + V1(kT)}};
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(kT))) == "ok");
}

TEST_CASE("stripe: failures never echo the expected MAC or the secret", "[stripe]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStripe, {kSecret});
  Headers headers = {{"Stripe-Signature", "t=" + std::to_string(kT) + ",v1=" + V1(kT, "x")}};
  Status status = Verify(endpoint, headers, kBody, At(kT));
  REQUIRE(!status.ok());
  CHECK(status.code() == Status::Code::kUnauthenticated);
  CHECK(status.ToString() == std::string(reason::kMismatch) + ": test-endpoint");
  CHECK(status.ToString().find(V1(kT)) == std::string::npos);
  CHECK(status.ToString().find(kSecret) == std::string::npos);
}

}  // namespace
}  // namespace hookbox
