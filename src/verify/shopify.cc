// Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the body keyed with the app's
// client secret. No signed timestamp; replays are caught by dedupe on the event id.
#include <string>

#include "verify/providers.h"

namespace hookbox::verify_internal {
namespace {

constexpr std::string_view kHeader = "X-Shopify-Hmac-Sha256";

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  return SingleMacClaim(endpoint, headers, kHeader, "", Encoding::kBase64, HashAlgorithm::kSha256,
                        std::string(body));
}

Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  Headers headers;
  headers.emplace(kHeader, Base64Encode(Hmac(HashAlgorithm::kSha256, secret.value, body)));
  AddIfNotEmpty(headers, "X-Shopify-Event-Id", event_id);
  AddIfNotEmpty(headers, "X-Shopify-Topic", event_type);
  return headers;
}

}  // namespace

const Scheme kShopify = {&Parse, &HmacWithSecret, &Sign};

}  // namespace hookbox::verify_internal
