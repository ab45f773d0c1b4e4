// GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the body keyed with the
// webhook secret. GitHub has no signed timestamp, so replays are caught by dedupe, not
// here. Deliveries from older integrations may carry only the legacy
// `X-Hub-Signature: sha1=<hex>` (HMAC-SHA1); it is checked only when the SHA-256 header
// is absent, so a sender that has both cannot be downgraded.
#include <string>

#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

constexpr std::string_view kHeader = "X-Hub-Signature-256";
constexpr std::string_view kLegacyHeader = "X-Hub-Signature";

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  if (!HeaderValue(headers, kHeader) && HeaderValue(headers, kLegacyHeader)) {
    return SingleMacClaim(endpoint, headers, kLegacyHeader, "sha1=", Encoding::kHex,
                          HashAlgorithm::kSha1, std::string(body));
  }
  return SingleMacClaim(endpoint, headers, kHeader, "sha256=", Encoding::kHex,
                        HashAlgorithm::kSha256, std::string(body));
}

Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  Headers headers;
  headers.emplace(kHeader, "sha256=" + HexEncode(Hmac(HashAlgorithm::kSha256, secret.value, body)));
  // X-GitHub-Delivery and X-GitHub-Event are its row's (verify.cc, Sign).
  headers.emplace("Content-Type", "application/json");
  return headers;
}

}  // namespace

const Scheme kGithub = {&Parse, &HmacWithSecret, &Sign};

}  // namespace hookbox::verify_internal
