// Signature verification: proves a delivery came from the producer before anything else
// looks at it. One file per provider (stripe.cc, github.cc, ...), all over the raw body
// bytes, all comparing MACs in constant time (base/crypto.h). Verification knows no storage
// and no network: it sees headers, body bytes, the endpoint's secrets and the time.
//
// Sign() is the producer's side of the same scheme, for `hookbox send`, the `http` handler
// and tests; it is declared in verify/sign.h (included here), which signers include alone.
// Thread-safe: everything here is a pure function of its arguments.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "base/headers.h"
#include "base/status.h"
#include "config/config.h"
#include "verify/sign.h"

namespace hookbox {

namespace verify_internal {
struct Scheme;  // scheme.h: one provider's parse, check and sign
}  // namespace verify_internal

// Why a delivery failed verification. Short, stable strings: they label metrics and are the
// only detail a remote client is told (never the expected MAC).
namespace reason {
inline constexpr const char* kMissing = "missing signature";
inline constexpr const char* kMalformed = "malformed signature";
inline constexpr const char* kMismatch = "signature mismatch";
inline constexpr const char* kTimestamp = "timestamp outside tolerance";
}  // namespace reason

// What verification proved of a delivery, and all that the steps after it need of the
// provider's scheme, so that none looks the scheme up again. Filled in place
// (Verifier::Verify), not moved: `body` may view into `signed_message`.
struct Verified {
  Verified() = default;
  Verified(const Verified&) = delete;
  Verified& operator=(const Verified&) = delete;

  // For the schemes whose signature does not cover the body's raw bytes (twilio: URL and
  // sorted decoded fields; square: URL, query and body): the message they sign, spelled
  // canonically (public_url as configured). Many requests verify with one message (fields
  // reordered or re-encoded, bytes moved across square's `?`), so identity hashes it
  // instead of the body (docs/SECURITY.md row 122). Empty for the other schemes, whose
  // signatures cover the raw body.
  std::string signed_message;
  // The body the delivery stands for: the request's, except for square, whose signature runs
  // `public_url?query` and the body together: there, the body as Square split it from the
  // query (from the first '{' after public_url), so that a request with bytes moved across
  // the `?` is stored and identified as the delivery it replays (docs/SECURITY.md row 124).
  // A view into `signed_message` or the request's body.
  std::string_view body;
  // The header that carries the event id the signature covers, for a scheme that signs one
  // (standard: webhook-id, or svix-id when that family is the one signed): identity reads
  // the default id from it alone. Empty for the other schemes, whose ids are their row's.
  std::string_view id_header;
};

// An endpoint bound to its provider's scheme, once: the receiver keeps one per endpoint of
// the loaded config (receive/receiver.h, ReceiverSetup), so a delivery's walk asks the
// provider table nothing. Holds a reference to `endpoint`, which must outlive it.
class Verifier {
 public:
  explicit Verifier(const Endpoint& endpoint);

  const Endpoint& endpoint() const { return *endpoint_; }

  // Ok when any one of endpoint.secrets verifies the delivery (rotation), with `out` filled
  // in. Otherwise Status::Unauthenticated(reason::..., endpoint.name). provider kNone always
  // passes. `query` is the request's query string, byte for byte (Delivery::query): the
  // schemes that sign the URL (square) sign endpoint.public_url followed by "?" and it,
  // when it is there.
  Status Verify(const Headers& headers, std::string_view body, TimePoint now,
                std::string_view query, Verified& out) const;

  // True when the endpoint's producer posts forms whose parsed fields its signature covers
  // (ProviderSpec::body, kForm: twilio, unless the query binds a JSON body by its hash) and
  // `body` has more than kMaxFormFields (base/form.h) fields: refused before Verify parses
  // them, so the work an unsigned request can cause is bounded (docs/SECURITY.md row 123).
  bool TooManyFormFields(std::string_view body, std::string_view query) const;

 private:
  const Endpoint* endpoint_;
  const verify_internal::Scheme* scheme_;  // nullptr for `verify: none`
};

// Verifier(endpoint).Verify(...), for a caller that checks one delivery (tests, the http
// handler's tests): `signed_message`, when given, is set as Verified::signed_message.
Status Verify(const Endpoint& endpoint, const Headers& headers, std::string_view body,
              TimePoint now, std::string_view query = {}, std::string* signed_message = nullptr);

// Standard Webhooks: the one header family ("webhook-" or "svix-") a delivery's id,
// timestamp and signature are read from. The signature header picks it: webhook-signature
// if present, else svix-signature if present, else "webhook-". Verification reads all three
// from it and names its id header in Verified::id_header, so the event id is always the one
// the signature covers (a svix-signed delivery with an added, unsigned `webhook-id` is the
// same event: docs/SECURITY.md row 7).
std::string_view StandardHeaderPrefix(const Headers& headers);

}  // namespace hookbox
