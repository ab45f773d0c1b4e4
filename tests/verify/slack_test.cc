// Tests for slack.cc.
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;
using testing::With;
using testing::Without;

constexpr int64_t kT = 1'700'000'000;
const std::string kBody = "token=abc&team_id=T1&command=%2Fhello";
const std::string kSecret = "8f742231b10e8888abcd99yyyzzz85a5";

std::string V0(const std::string& secret = kSecret, int64_t t = kT) {
  return "v0=" +
         HexEncode(Hmac(HashAlgorithm::kSha256, secret, "v0:" + std::to_string(t) + ":" + kBody));
}

Headers Delivery(const std::string& signature = V0()) {
  return {{"X-Slack-Signature", signature}, {"X-Slack-Request-Timestamp", std::to_string(kT)}};
}

std::string Check(const Headers& headers, TimePoint now = At(kT)) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kSlack, {kSecret});
  return Outcome(Verify(endpoint, headers, kBody, now));
}

TEST_CASE("slack: Sign then Verify", "[slack]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kSlack, {kSecret});
  Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(kT), "Ev1", "app_mention");
  CHECK(headers == Delivery());
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(kT))) == "ok");
}

TEST_CASE("slack: rotation", "[slack]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kSlack, {"old", "new"});
  CHECK(Outcome(Verify(endpoint, Delivery(V0("new")), kBody, At(kT))) == "ok");
  CHECK(Outcome(Verify(endpoint, Delivery(V0("x")), kBody, At(kT))) == reason::kMismatch);
}

TEST_CASE("slack: timestamp tolerance", "[slack]") {
  CHECK(Check(Delivery(), At(kT + 300)) == "ok");
  CHECK(Check(Delivery(), At(kT + 301)) == reason::kTimestamp);
  CHECK(Check(Delivery(), At(kT - 300)) == "ok");
  CHECK(Check(Delivery(), At(kT - 301)) == reason::kTimestamp);
  CHECK(Check(With(Delivery(), "X-Slack-Request-Timestamp", std::to_string(kT + 1))) ==
        reason::kMismatch);
  CHECK(Check(Delivery(V0(kSecret, kT + 1))) == reason::kMismatch);
}

TEST_CASE("slack: missing and malformed", "[slack]") {
  CHECK(Check({}) == reason::kMissing);
  CHECK(Check(Without(Delivery(), "X-Slack-Signature")) == reason::kMissing);
  CHECK(Check(Without(Delivery(), "X-Slack-Request-Timestamp")) == reason::kMissing);
  CHECK(Check(With(Delivery(), "X-Slack-Request-Timestamp", "")) == reason::kMissing);
  CHECK(Check(Delivery("")) == reason::kMissing);
  std::string hex = V0().substr(3);
  for (const std::string& bad : std::vector<std::string>{
           hex, "v1=" + hex, "V0=" + hex, "v0:" + hex, "v0=", "v0=" + hex.substr(1),
           "v0=" + hex.substr(2), "v0=" + hex + "00", "v0=" + std::string(64, 'x'), "v0= " + hex,
           "v0=" + hex + ",v0=" + hex, "v0=" + std::string(9000, '0')}) {
    INFO(bad);
    CHECK(Check(Delivery(bad)) == reason::kMalformed);
  }
  for (const char* bad_ts : {"abc", "-1700000000", "1700000000 ", "17e8", "1700000000000000000"}) {
    INFO(bad_ts);
    CHECK(Check(With(Delivery(), "X-Slack-Request-Timestamp", bad_ts)) == reason::kMalformed);
  }
}

}  // namespace
}  // namespace hookbox
