// Tests for gitlab.cc.
#include <catch2/catch.hpp>

#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;

const std::string kBody = R"({"object_kind":"push"})";

std::string Check(const Headers& headers, std::vector<std::string> secrets = {"glpat-token"}) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kGitlab, std::move(secrets));
  return Outcome(Verify(endpoint, headers, kBody, At(1'700'000'000)));
}

TEST_CASE("gitlab: Sign then Verify", "[gitlab]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kGitlab, {"glpat-token"});
  Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(0), "uuid-1", "Push Hook");
  CHECK(testing::First(headers, "X-Gitlab-Token") == "glpat-token");
  CHECK(testing::First(headers, "Idempotency-Key") == "uuid-1");
  CHECK(testing::First(headers, "X-Gitlab-Event") == "Push Hook");
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(0))) == "ok");
  // The token is not a MAC: the body is not covered.
  CHECK(Outcome(Verify(endpoint, headers, "anything", At(0))) == "ok");
  CHECK(Sign(endpoint, endpoint.secrets[0], kBody, At(0)).size() == 1);
}

TEST_CASE("gitlab: token must equal a secret exactly", "[gitlab]") {
  CHECK(Check({{"X-Gitlab-Token", "glpat-token"}}) == "ok");
  CHECK(Check({{"X-Gitlab-Token", "glpat-toke"}}) == reason::kMismatch);    // prefix
  CHECK(Check({{"X-Gitlab-Token", "glpat-tokenX"}}) == reason::kMismatch);  // longer
  CHECK(Check({{"X-Gitlab-Token", "GLPAT-TOKEN"}}) == reason::kMismatch);
  CHECK(Check({{"X-Gitlab-Token", " glpat-token"}}) == reason::kMismatch);
  CHECK(Check({{"X-Gitlab-Token", std::string(10000, 'a')}}) == reason::kMalformed);
  CHECK(Check({{"x-gitlab-token", "glpat-token"}}) == "ok");
  CHECK(Check({{"X-Gitlab-Token", "glpat-token"}, {"X-Gitlab-Token", "glpat-token"}}) ==
        reason::kMalformed);
}

TEST_CASE("gitlab: rotation", "[gitlab]") {
  CHECK(Check({{"X-Gitlab-Token", "new"}}, {"old", "new"}) == "ok");
  CHECK(Check({{"X-Gitlab-Token", "old"}}, {"old", "new"}) == "ok");
  CHECK(Check({{"X-Gitlab-Token", "other"}}, {"old", "new"}) == reason::kMismatch);
}

TEST_CASE("gitlab: missing token", "[gitlab]") {
  CHECK(Check({}) == reason::kMissing);
  CHECK(Check({{"X-Gitlab-Token", ""}}) == reason::kMissing);
  // An empty configured secret never matches anything (config refuses it anyway).
  CHECK(Check({{"X-Gitlab-Token", "x"}}, {""}) == reason::kMismatch);
}

}  // namespace
}  // namespace hookbox
