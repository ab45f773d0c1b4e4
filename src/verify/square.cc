// Square: `x-square-hmacsha256-signature: <base64>`, HMAC-SHA256 keyed with the
// subscription's signature key over the notification URL followed by the body. The URL is
// the endpoint's public_url (what Square's dashboard shows: behind a proxy hookbox cannot
// know it) followed by "?" and the query the request arrived with, byte for byte, when it
// has one. No signed timestamp: replays are caught by dedupe on the body's event_id (and
// the hash of the signed message, not of the body, for `dedupe: [id, body]`).
//
// Nothing separates the query from the body in the signed text, so bytes moved across the
// `?` (`?token=abc{` and the body without its `{`) verify alike. Such a request is Square's
// delivery under another spelling: Verified::body is read back where Square split it,
// and the receiver identifies and stores that, so the replay is a `duplicate` of the event
// (200, no handler run) and, arriving first, is stored with Square's JSON. A request split
// elsewhere cannot name another event id, as the id is read from the message, not from the
// request's split. (Refusing such requests with 400, as hookbox once did, created nothing
// either, but answered a replay of a stored event unlike every other replay.)
#include <string>

#include "base/status_macros.h"
#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

constexpr std::string_view kHeader = "x-square-hmacsha256-signature";

// Square's body is its JSON object: it starts at the first '{' after public_url. A query
// cannot hold a raw '{' (RFC 3986 leaves it out; Square's dashboard keeps the URL as a URL),
// so no byte of Square's own query is taken into the body. Without a '{' there is no body
// Square sent: body_at stays npos (the receiver keeps the request's, and identify refuses it).
StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  ASSIGN_OR_RETURN(
      Claim claim,
      SingleMacClaim(endpoint, headers, kHeader, "", Encoding::kBase64, HashAlgorithm::kSha256,
                     SignedUrl(endpoint.public_url, query) + std::string(body)));
  claim.message_is_identity = true;
  claim.body_at = claim.message.find('{', endpoint.public_url.size());
  return claim;
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

const Scheme kSquare = {.parse = &Parse, .expected_mac = &HmacWithSecret, .sign = &Sign};

}  // namespace hookbox::verify_internal
