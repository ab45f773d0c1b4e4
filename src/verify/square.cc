// Square: `x-square-hmacsha256-signature: <base64>`, HMAC-SHA256 keyed with the
// subscription's signature key over the notification URL followed by the body. The URL is
// the endpoint's public_url (what Square's dashboard shows: behind a proxy hookbox cannot
// know it) followed by "?" and the query the request arrived with, byte for byte, when it
// has one. No signed timestamp: replays are caught by dedupe on the body's event_id (and
// the hash of the signed message, not of the body, for `dedupe: [id, body]`: bytes moved
// across the `?` sign alike). A body whose /event_id cannot be read is refused (identify.cc).
#include <string>

#include "verify/providers.h"

namespace hookbox::verify_internal {
namespace {

constexpr std::string_view kHeader = "x-square-hmacsha256-signature";

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  return SingleMacClaim(endpoint, headers, kHeader, "", Encoding::kBase64, HashAlgorithm::kSha256,
                        SignedUrl(endpoint.public_url, query) + std::string(body));
}

// Signs for public_url without a query (what `hookbox send` posts to, given no --url).
Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  Headers headers;
  headers.emplace(kHeader, Base64Encode(Hmac(HashAlgorithm::kSha256, secret.value,
                                             endpoint.public_url + std::string(body))));
  return headers;
}

}  // namespace

const Scheme kSquare = {&Parse, &HmacWithSecret, &Sign, /*signs_parsed_body=*/true};

}  // namespace hookbox::verify_internal
