// The shape every provider's file fills in, and the helpers they share. Internal to
// src/verify/: each file defines the Scheme named after its row of config/providers.h (what
// hookbox knows of the provider besides its signature). verify.cc builds its table of
// schemes from those rows, picks one by endpoint.provider, asks it to parse the delivery's headers
// into a Claim once, then checks the Claim against each secret in turn (rotation).
// Splitting parse from check keeps the secret loop and the constant-time comparison in one
// place, and lets every failure reason except "mismatch" be decided before any secret is
// touched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/crypto.h"
#include "verify/verify.h"

namespace hookbox::verify_internal {

// What a delivery's headers claim: the producer MACed `message` with `algorithm` and sent
// `macs`, or signed it with an Ed25519 private key and sent `signatures` (decoded raw bytes;
// any one matching is enough, as when a producer signs with old and new secret during its
// own rotation). MACs are checked against the shared secrets, signatures against the
// public keys (Secret::public_key); a scheme may carry both (standard: v1 and v1a).
// `other_messages`: other spellings of the message the producer may have signed, each tried
// like `message` (twilio: its URL with and without the port).
//
// The rest is what the steps after verification need of the scheme, decided by parse so
// that nothing asks the scheme again (verify.h, Verified):
// - `message_is_identity`: the signature covers a message built from the request (parsed
//   fields, URL and body run together) rather than the body's raw bytes; identity hashes
//   `message`, which every request that verifies alike shares (twilio, square).
// - `body_at`: where in `message` the producer's body starts, for a scheme whose message
//   runs the body on from the URL with no separator (square); npos: the request's body,
//   whose bytes the signature fixes.
// - `id_header`: the header whose event id the signature covers (standard's webhook-id or
//   svix-id); empty: the id is read from the provider's row.
struct Claim {
  HashAlgorithm algorithm = HashAlgorithm::kSha256;
  std::string message;
  std::vector<std::string> other_messages;
  std::vector<std::string> macs;
  std::vector<std::string> signatures;
  bool message_is_identity = false;
  size_t body_at = std::string::npos;
  std::string_view id_header;
};

struct Scheme {
  // The Claim in the headers, or Unauthenticated(kMissing | kMalformed | kTimestamp).
  // `query`: the request's query string (what followed '?'), for schemes that sign the URL.
  StatusOr<Claim> (*parse)(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                           TimePoint now, std::string_view query);
  // The MAC a producer holding `secret` sends for the claim's message; nullopt when the
  // secret cannot produce one (e.g. a standard secret that is not base64). Never called
  // with a public key (those check Claim::signatures); nullptr for public-key-only schemes.
  std::optional<std::string> (*expected_mac)(const Endpoint& endpoint, const Claim& claim,
                                             const Secret& secret);
  // See hookbox::Sign in verify.h. Never called with a public key (only the producer signs);
  // nullptr for public-key-only schemes.
  Headers (*sign)(const Endpoint& endpoint, const Secret& secret, std::string_view body,
                  TimePoint now, std::string_view event_id, std::string_view event_type);
  // For a form-body scheme (ProviderSpec::body): true when this request's signature covers
  // its body by a hash in the query instead of by its parsed fields (twilio's bodySHA256),
  // so the body is not parsed and not bounded as a form. nullptr: always parsed. Asked
  // before parse, as the bound on the fields comes before the work of parsing them.
  bool (*body_signed_by_hash)(std::string_view query) = nullptr;
};

// One Scheme per row of config/providers.h, named as the row: kStripe, kGithub, ...
#define HOOKBOX_DECLARE_SCHEME(id, ...) extern const Scheme id;
HOOKBOX_PROVIDERS(HOOKBOX_DECLARE_SCHEME)
#undef HOOKBOX_DECLARE_SCHEME

// Limits on what a signature header may carry; past them the header is malformed. They
// bound the work an unauthenticated request can cause (macs and signatures together).
inline constexpr size_t kMaxHeaderBytes = 8192;
inline constexpr size_t kMaxMacs = 16;

// expected_mac for the common case: HMAC keyed with the secret string as-is.
std::optional<std::string> HmacWithSecret(const Endpoint& endpoint, const Claim& claim,
                                          const Secret& secret);

// Shorthand for Status::Unauthenticated(why, endpoint.name).
Status Fail(const Endpoint& endpoint, const char* why);

// The single value of a header that must be there: kMissing when absent or empty,
// kMalformed when repeated (two values are ambiguous) or longer than kMaxHeaderBytes.
StatusOr<std::string_view> RequiredHeader(const Endpoint& endpoint, const Headers& headers,
                                          std::string_view name);

enum class Encoding { kHex, kBase64 };
// "hex" | "base64" (the generic hmac provider's `encoding`); nullopt otherwise.
std::optional<Encoding> ParseEncoding(std::string_view name);
std::string EncodeMac(Encoding encoding, std::string_view mac);
// Decodes one MAC, which must be exactly DigestSize(algorithm) bytes; kMalformed otherwise.
StatusOr<std::string> DecodeMac(const Endpoint& endpoint, std::string_view text, Encoding encoding,
                                HashAlgorithm algorithm);
// Decodes one Ed25519 signature (64 bytes); kMalformed otherwise.
StatusOr<std::string> DecodeSignature(const Endpoint& endpoint, std::string_view text,
                                      Encoding encoding);

// The URL a URL-signing producer (square, twilio) called: `public_url` (endpoint.public_url,
// or twilio's other spelling of it), then "?" and the request's query byte for byte when it
// has one.
std::string SignedUrl(std::string public_url, std::string_view query);

// The claim of a scheme that sends a single MAC of `message` in header `name`, written as
// `prefix` + encoded MAC (github, shopify, slack, generic hmac). kMissing / kMalformed as
// RequiredHeader and DecodeMac say; a value without the prefix is malformed.
StatusOr<Claim> SingleMacClaim(const Endpoint& endpoint, const Headers& headers,
                               std::string_view name, std::string_view prefix, Encoding encoding,
                               HashAlgorithm algorithm, std::string message);

// A signature header of `separator`-separated key=value parameters: one timestamp
// (`timestamp_key`) and one or more hex HMAC-SHA256s (`mac_key`, several while the producer
// rolls its secret; at most kMaxMacs) of "<timestamp><joiner><body>" keyed with the secret
// as it is. Other keys are ignored, once `valid_key` (when set) accepts them. Stripe's
// `t=,v1=` and Paddle's `ts=;h1=`.
struct ParameterHeader {
  std::string_view name;
  char separator;
  std::string_view timestamp_key;
  std::string_view mac_key;
  char joiner;
  bool (*valid_key)(std::string_view key) = nullptr;
};

// The claim such a header makes: kMissing / kMalformed as RequiredHeader says; kMalformed for
// a parameter without '=', a key `valid_key` refuses, a second timestamp, a MAC that does not
// decode, too many MACs, or no timestamp or MAC; kTimestamp as CheckTimestamp says.
StatusOr<Claim> ParameterClaim(const ParameterHeader& format, const Endpoint& endpoint,
                               const Headers& headers, std::string_view body, TimePoint now);
// The header a producer holding `secret` sends: one timestamp (`now`) and one MAC.
Headers ParameterSign(const ParameterHeader& format, const Secret& secret, std::string_view body,
                      TimePoint now);

// Scheme::parse and Scheme::sign for a ParameterHeader (a constant of the provider's file).
template <const ParameterHeader& kFormat>
StatusOr<Claim> ParseParameters(const Endpoint& endpoint, const Headers& headers,
                                std::string_view body, TimePoint now, std::string_view) {
  return ParameterClaim(kFormat, endpoint, headers, body, now);
}
template <const ParameterHeader& kFormat>
Headers SignParameters(const Endpoint&, const Secret& secret, std::string_view body, TimePoint now,
                       std::string_view, std::string_view) {
  return ParameterSign(kFormat, secret, body, now);
}

// A single MAC of the raw body in header `name`, written as `prefix` + encoded MAC (shopify).
struct MacHeader {
  std::string_view name;
  std::string_view prefix;
  Encoding encoding;
  HashAlgorithm algorithm;
};

// Scheme::parse for a MacHeader (a constant of the provider's file): SingleMacClaim over the
// body.
template <const MacHeader& kFormat>
StatusOr<Claim> ParseBodyMac(const Endpoint& endpoint, const Headers& headers,
                             std::string_view body, TimePoint, std::string_view) {
  return SingleMacClaim(endpoint, headers, kFormat.name, kFormat.prefix, kFormat.encoding,
                        kFormat.algorithm, std::string(body));
}

// A Unix timestamp in seconds, digits only (at most 15 of them): kMalformed otherwise;
// kTimestamp when it is more than endpoint.tolerance away from `now`, either direction.
StatusOr<int64_t> CheckTimestamp(const Endpoint& endpoint, std::string_view text, TimePoint now);

// `now` as whole Unix seconds, the way producers stamp their signatures.
int64_t UnixSeconds(TimePoint now);

// Sign() helper: adds the header unless `value` is empty.
void AddIfNotEmpty(Headers& headers, std::string_view name, std::string_view value);

// Splits on every `sep`; "a,,b" gives an empty middle piece, "" gives one empty piece.
std::vector<std::string_view> Split(std::string_view text, char sep);

}  // namespace hookbox::verify_internal
