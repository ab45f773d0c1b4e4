// The generic HMAC provider, for producers with no scheme of their own: the endpoint names
// the header, its optional prefix (e.g. "sha256="), the encoding (hex | base64) and the
// algorithm (sha1 | sha256 | sha512); the MAC is over the raw body, keyed with the secret
// string. No timestamp. An algorithm or encoding that config validation should have
// refused makes every delivery fail as a mismatch rather than crash or pass.
#include <optional>
#include <string>

#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  const HmacScheme& scheme = endpoint.hmac;
  if (scheme.header.empty()) return Fail(endpoint, reason::kMissing);
  std::optional<HashAlgorithm> algorithm = ParseHashAlgorithm(scheme.algorithm);
  std::optional<Encoding> encoding = ParseEncoding(scheme.encoding);
  if (!algorithm || !encoding) return Fail(endpoint, reason::kMismatch);
  return SingleMacClaim(endpoint, headers, scheme.header, scheme.prefix, *encoding, *algorithm,
                        std::string(body));
}

Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  const HmacScheme& scheme = endpoint.hmac;
  std::optional<HashAlgorithm> algorithm = ParseHashAlgorithm(scheme.algorithm);
  std::optional<Encoding> encoding = ParseEncoding(scheme.encoding);
  if (scheme.header.empty() || !algorithm || !encoding) return {};
  Headers headers;
  headers.emplace(scheme.header,
                  scheme.prefix + EncodeMac(*encoding, Hmac(*algorithm, secret.value, body)));
  return headers;
}

}  // namespace

const Scheme kHmac = {&Parse, &HmacWithSecret, &Sign};

}  // namespace hookbox::verify_internal
