// Tests for paddle.cc: Paddle-Signature (ts=…;h1=…), HMAC-SHA256 of "<ts>:<body>". The MACs
// here are computed independently (base/crypto.h over the documented message); the
// interop test (tests/interop/paddle.test.mjs) checks the same scheme against Paddle's SDK.
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

constexpr int64_t kT = 1'671'552'777;
const std::string kBody =
    R"({"event_id":"evt_01h8bkrgchfh9mjtzdjpqrkrcn","event_type":"transaction.paid","data":{}})";
const std::string kSecret = "pdl_ntfset_01h8bkrdxh4bb1kbzx2pzyf4w0_6Yjc4hbrmVj0EK3ZzbXMl6mT";

std::string H1(const std::string& secret = kSecret, int64_t t = kT,
               const std::string& body = kBody) {
  return HexEncode(Hmac(HashAlgorithm::kSha256, secret, std::to_string(t) + ":" + body));
}

Headers Delivery(const std::string& signature) { return {{"Paddle-Signature", signature}}; }

std::string Check(const Headers& headers, TimePoint now = At(kT),
                  std::vector<std::string> secrets = {kSecret}) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kPaddle, std::move(secrets));
  return Outcome(Verify(endpoint, headers, kBody, now));
}

const std::string kGood = "ts=" + std::to_string(kT) + ";h1=" + H1();

TEST_CASE("paddle: Sign then Verify", "[paddle]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kPaddle, {kSecret});
  Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(kT), "evt_1", "transaction.paid");
  CHECK(headers == Delivery(kGood));
  CHECK(Check(headers) == "ok");
}

TEST_CASE("paddle: a valid signature, rotation, and extra keys", "[paddle]") {
  CHECK(Check(Delivery(kGood)) == "ok");
  // Rotation: two h1 entries, either secret configured.
  const std::string both = "ts=" + std::to_string(kT) + ";h1=" + H1("old secret") + ";h1=" + H1();
  CHECK(Check(Delivery(both)) == "ok");
  CHECK(Check(Delivery(both), At(kT), {"old secret"}) == "ok");
  CHECK(Check(Delivery(kGood + ";h2=abcd")) == "ok");  // a scheme it does not know: ignored
}

TEST_CASE("paddle: a changed body, signature or timestamp fails, and why", "[paddle]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kPaddle, {kSecret});
  CHECK(Outcome(Verify(endpoint, Delivery(kGood), kBody + " ", At(kT))) == "signature mismatch");
  std::string flipped = kGood;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  CHECK(Check(Delivery(flipped)) == "signature mismatch");
  // The timestamp is part of the MAC: moving it breaks the signature...
  CHECK(Check(Delivery("ts=" + std::to_string(kT + 1) + ";h1=" + H1()), At(kT)) ==
        "signature mismatch");
  // ...and an old or future one is refused before any MAC is computed.
  CHECK(Check(Delivery(kGood), At(kT + 301)) == "timestamp outside tolerance");
  CHECK(Check(Delivery(kGood), At(kT - 301)) == "timestamp outside tolerance");
  CHECK(Check(Delivery(kGood), At(kT + 300)) == "ok");
  CHECK(Check(Delivery(kGood), At(kT), {"another secret"}) == "signature mismatch");
}

TEST_CASE("paddle: missing and malformed headers", "[paddle]") {
  CHECK(Check({}) == "missing signature");
  CHECK(Check(Delivery("")) == "missing signature");
  CHECK(Check(Delivery("h1=" + H1())) == "malformed signature");                         // no ts
  CHECK(Check(Delivery("ts=" + std::to_string(kT))) == "malformed signature");           // no h1
  CHECK(Check(Delivery(kGood + ";ts=" + std::to_string(kT))) == "malformed signature");  // 2 ts
  CHECK(Check(Delivery("ts=" + std::to_string(kT) + ";h1=zz")) == "malformed signature");
  CHECK(Check(Delivery("ts=" + std::to_string(kT) + ";h1=" + H1().substr(2))) ==
        "malformed signature");  // short MAC
  CHECK(Check(Delivery("ts=soon;h1=" + H1())) == "malformed signature");
  CHECK(Check(Delivery(kGood + ";garbage")) == "malformed signature");
  // The header twice: which one was meant is ambiguous.
  CHECK(Check({{"Paddle-Signature", kGood}, {"Paddle-Signature", kGood}}) == "malformed signature");
}

}  // namespace
}  // namespace hookbox
