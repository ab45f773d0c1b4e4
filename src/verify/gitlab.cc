// GitLab: no MAC at all; `X-Gitlab-Token` carries the secret itself. It is compared as
// SHA-256 digests of token and secret, so the constant-time comparison sees two 32-byte
// strings and the time taken says nothing about the secret's length or contents.
#include <string>

#include "base/status_macros.h"
#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

constexpr std::string_view kHeader = "X-Gitlab-Token";

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  ASSIGN_OR_RETURN(std::string_view token, RequiredHeader(endpoint, headers, kHeader));
  Claim claim;
  claim.macs.push_back(Sha256(token));
  return claim;
}

std::optional<std::string> ExpectedMac(const Endpoint& endpoint, const Claim& claim,
                                       const Secret& secret) {
  return Sha256(secret.value);
}

Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  Headers headers;
  headers.emplace(kHeader, secret.value);  // Idempotency-Key, X-Gitlab-Event: its row's
  return headers;
}

}  // namespace

const Scheme kGitlab = {&Parse, &ExpectedMac, &Sign};

}  // namespace hookbox::verify_internal
