// Standard Webhooks (and Svix, the same scheme under `svix-*` header names):
// `webhook-id`, `webhook-timestamp`, and `webhook-signature: v1,<base64> [v1,<base64> ...]`,
// HMAC-SHA256 of "<id>.<ts>.<body>". Unlike Stripe the key is not the secret string but
// the bytes it encodes: base64 after a `whsec_` prefix. `v1a,<base64>` entries are the
// spec's asymmetric signatures: Ed25519 over the same "<id>.<ts>.<body>", checked against
// `whpk_` public keys (parsed at load). One endpoint may hold both kinds (a producer moving
// from one to the other). Entries of other versions are ignored; the timestamp must be
// within tolerance.
#include <openssl/rand.h>

#include <random>
#include <string>

#include "base/status_macros.h"
#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

// The HMAC key a secret stands for; nullopt unless it is `whsec_` then base64 (it then never
// verifies; the config loader refuses such a secret, config_internal::IsStandardWebhooksSecret).
// The prefix is required: a public key pasted without its `whpk_` would otherwise be an HMAC
// key that anyone holding the public key could sign with (docs/SECURITY.md row 120).
// Padding is not significant: "whsec_c2VjcmV0Cg" and "whsec_c2VjcmV0Cg==" are one key.
std::optional<std::string> KeyOf(const Secret& secret) {
  std::string_view text = secret.value;
  if (!text.starts_with("whsec_")) return std::nullopt;
  text.remove_prefix(6);
  std::optional<std::string> key = Base64DecodeOptionalPadding(text);
  if (!key || key->empty()) return std::nullopt;
  return key;
}

std::optional<std::string> ExpectedMac(const Endpoint& endpoint, const Claim& claim,
                                       const Secret& secret) {
  std::optional<std::string> key = KeyOf(secret);
  if (!key) return std::nullopt;
  return Hmac(claim.algorithm, *key, claim.message);
}

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  // The family is chosen by the signature header, and all three must come from it.
  const std::string prefix(StandardHeaderPrefix(headers));
  ASSIGN_OR_RETURN(std::string_view signature,
                   RequiredHeader(endpoint, headers, prefix + "signature"));
  ASSIGN_OR_RETURN(std::string_view id, RequiredHeader(endpoint, headers, prefix + "id"));
  ASSIGN_OR_RETURN(std::string_view timestamp,
                   RequiredHeader(endpoint, headers, prefix + "timestamp"));

  Claim claim;
  for (std::string_view entry : Split(signature, ' ')) {
    size_t comma = entry.find(',');
    if (comma == std::string_view::npos) return Fail(endpoint, reason::kMalformed);
    const std::string_view version = entry.substr(0, comma);
    if (version != "v1" && version != "v1a") continue;
    if (claim.macs.size() + claim.signatures.size() == kMaxMacs) {
      return Fail(endpoint, reason::kMalformed);
    }
    if (version == "v1a") {
      ASSIGN_OR_RETURN(std::string sig,
                       DecodeSignature(endpoint, entry.substr(comma + 1), Encoding::kBase64));
      claim.signatures.push_back(std::move(sig));
      continue;
    }
    ASSIGN_OR_RETURN(std::string mac, DecodeMac(endpoint, entry.substr(comma + 1),
                                                Encoding::kBase64, claim.algorithm));
    claim.macs.push_back(std::move(mac));
  }
  if (claim.macs.empty() && claim.signatures.empty()) return Fail(endpoint, reason::kMalformed);
  RETURN_IF_ERROR(CheckTimestamp(endpoint, timestamp, now));
  claim.message = std::string(id) + "." + std::string(timestamp) + "." + std::string(body);
  // The id the signature covers is the signed family's: a svix-signed delivery with an added,
  // unsigned webhook-id is no new event (docs/SECURITY.md row 7).
  claim.id_header = prefix == "svix-" ? "svix-id" : "webhook-id";
  return claim;
}

// A fresh message id for deliveries that bring none: "msg_" and 24 random hex digits.
std::string NewMessageId() {
  unsigned char bytes[12] = {};
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    // OpenSSL's generator failed (it cannot, once seeded, but its result is checked): the id
    // must only be unique, so the OS's generator through the standard library stands in.
    std::random_device os;
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(os());
  }
  return "msg_" + HexEncode(std::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  std::string id = event_id.empty() ? NewMessageId() : std::string(event_id);
  std::string ts = std::to_string(UnixSeconds(now));
  Headers headers;
  headers.emplace("webhook-id", id);
  headers.emplace("webhook-timestamp", ts);
  // A secret that is not base64 cannot sign: the delivery goes out unsigned and the
  // receiver answers "missing signature", which names the problem.
  if (std::optional<std::string> key = KeyOf(secret)) {
    std::string mac = Hmac(HashAlgorithm::kSha256, *key, id + "." + ts + "." + std::string(body));
    headers.emplace("webhook-signature", "v1," + Base64Encode(mac));
  }
  return headers;
}

}  // namespace

const Scheme kStandard = {.parse = &Parse, .expected_mac = &ExpectedMac, .sign = &Sign};

}  // namespace hookbox::verify_internal

namespace hookbox {

std::string_view StandardHeaderPrefix(const Headers& headers) {
  if (HeaderValue(headers, "webhook-signature")) return "webhook-";
  if (HeaderValue(headers, "svix-signature")) return "svix-";
  return "webhook-";
}

}  // namespace hookbox
