// Tests for github.cc.
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

const std::string kBody = R"({"zen":"Keep it logically awesome."})";
const std::string kSecret = "gh-secret";

std::string Sig256(const std::string& secret = kSecret) {
  return "sha256=" + HexEncode(Hmac(HashAlgorithm::kSha256, secret, kBody));
}
std::string Sig1(const std::string& secret = kSecret) {
  return "sha1=" + HexEncode(Hmac(HashAlgorithm::kSha1, secret, kBody));
}

std::string Check(const Headers& headers) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kGithub, {kSecret});
  return Outcome(Verify(endpoint, headers, kBody, At(1'700'000'000)));
}

TEST_CASE("github: Sign then Verify", "[github]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kGithub, {kSecret});
  Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(0), "d-1", "push");
  CHECK(testing::First(headers, "X-Hub-Signature-256") == Sig256());
  CHECK(testing::First(headers, "X-GitHub-Delivery") == "d-1");
  CHECK(testing::First(headers, "X-GitHub-Event") == "push");
  CHECK(testing::First(headers, "Content-Type") == "application/json");
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(0))) == "ok");
  // No timestamp: any time will do.
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(4'000'000'000))) == "ok");

  Headers bare = Sign(endpoint, endpoint.secrets[0], kBody, At(0));
  CHECK(bare.count("X-GitHub-Delivery") == 0);
  CHECK(bare.count("X-GitHub-Event") == 0);
}

TEST_CASE("github: rotation", "[github]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kGithub, {"old", "new"});
  Headers headers = {{"X-Hub-Signature-256", Sig256("new")}};
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(0))) == "ok");
  headers = {{"X-Hub-Signature-256", Sig256("neither")}};
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(0))) == reason::kMismatch);
}

TEST_CASE("github: legacy sha1 header only when sha256 is absent", "[github]") {
  CHECK(Check({{"X-Hub-Signature", Sig1()}}) == "ok");
  CHECK(Check({{"X-Hub-Signature", Sig1("other")}}) == reason::kMismatch);
  CHECK(Check({{"X-Hub-Signature", Sig256()}}) == reason::kMalformed);
  CHECK(Check({{"X-Hub-Signature", ""}}) == reason::kMissing);
  // Both present: the sha256 header decides; a good sha1 cannot rescue a bad sha256.
  CHECK(Check({{"X-Hub-Signature-256", Sig256()}, {"X-Hub-Signature", Sig1("x")}}) == "ok");
  CHECK(Check({{"X-Hub-Signature-256", Sig256("x")}, {"X-Hub-Signature", Sig1()}}) ==
        reason::kMismatch);
  CHECK(Check({{"X-Hub-Signature-256", ""}, {"X-Hub-Signature", Sig1()}}) == reason::kMissing);
}

TEST_CASE("github: missing and malformed", "[github]") {
  CHECK(Check({}) == reason::kMissing);
  CHECK(Check({{"X-Hub-Signature-256", ""}}) == reason::kMissing);
  std::string hex = Sig256().substr(7);
  for (const std::string& bad : std::vector<std::string>{
           hex,            // no prefix
           "sha1=" + hex,  // wrong prefix for this header
           "SHA256=" + hex,
           "sha256:" + hex,
           "sha256=",
           "sha256=" + hex.substr(1),  // odd length
           "sha256=" + hex.substr(2),  // short
           "sha256=" + hex + "ab",     // long
           "sha256=" + std::string(64, 'z'),
           "sha256= " + hex,
           "sha256=" + hex + " ",
           "sha256=" + hex + "," + Sig256(),
           "sha256=" + std::string(9000, 'a'),
       }) {
    INFO(bad);
    CHECK(Check({{"X-Hub-Signature-256", bad}}) == reason::kMalformed);
  }
  CHECK(Check({{"X-Hub-Signature-256", Sig256()}, {"X-Hub-Signature-256", Sig256()}}) ==
        reason::kMalformed);
}

}  // namespace
}  // namespace hookbox
