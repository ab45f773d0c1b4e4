// Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the body keyed with the app's
// client secret. No signed timestamp; replays are caught by dedupe on the event id.
#include <string>

#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

constexpr MacHeader kFormat{"X-Shopify-Hmac-Sha256", "", Encoding::kBase64, HashAlgorithm::kSha256};

// X-Shopify-Event-Id and X-Shopify-Topic are its row's (verify.cc, Sign).
Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  Headers headers;
  headers.emplace(kFormat.name, Base64Encode(Hmac(kFormat.algorithm, secret.value, body)));
  return headers;
}

}  // namespace

const Scheme kShopify = {
    .parse = &ParseBodyMac<kFormat>, .expected_mac = &HmacWithSecret, .sign = &Sign};

}  // namespace hookbox::verify_internal
