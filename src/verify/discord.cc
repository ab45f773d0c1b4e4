// Discord webhook events: `X-Signature-Ed25519: <hex signature>` and
// `X-Signature-Timestamp: <unix seconds>`, an Ed25519 signature over "<timestamp><body>"
// (no separator) made with the application's private key. The secret entries are the
// application's public key (64 hex digits, parsed at load into Secret::public_key), so
// hookbox can verify but never sign. The timestamp must be within the endpoint's tolerance.
// Discord's PING (body type 0) is answered after this check, as its row says (the early
// answer, config/providers.h). Its events carry no id: the row has none, so the body's hash.
#include <string>

#include "base/status_macros.h"
#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  ASSIGN_OR_RETURN(std::string_view signature,
                   RequiredHeader(endpoint, headers, "X-Signature-Ed25519"));
  ASSIGN_OR_RETURN(std::string_view timestamp,
                   RequiredHeader(endpoint, headers, "X-Signature-Timestamp"));
  ASSIGN_OR_RETURN(std::string raw, DecodeSignature(endpoint, signature, Encoding::kHex));
  RETURN_IF_ERROR(CheckTimestamp(endpoint, timestamp, now));
  Claim claim;
  claim.message = std::string(timestamp) + std::string(body);
  claim.signatures.push_back(std::move(raw));
  return claim;
}

}  // namespace

const Scheme kDiscord = {&Parse, nullptr, nullptr};  // public keys only: no MAC, no signing

}  // namespace hookbox::verify_internal
