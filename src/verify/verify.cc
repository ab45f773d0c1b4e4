// The entry points of verification: Verify picks the endpoint's provider scheme, has it
// parse the delivery's headers once, then tries each configured secret (rotation: one match
// is enough), comparing every MAC in constant time. Also the small helpers all schemes
// share — required headers, MAC decoding, strict timestamps — so each provider file holds
// only what is particular to its producer.
#include "verify/verify.h"

#include <charconv>
#include <utility>

#include "base/crypto.h"
#include "base/form.h"
#include "base/status_macros.h"
#include "verify/scheme.h"

namespace hookbox {
namespace verify_internal {

std::optional<std::string> HmacWithSecret(const Endpoint& endpoint, const Claim& claim,
                                          const Secret& secret) {
  return Hmac(claim.algorithm, secret.value, claim.message);
}

Status Fail(const Endpoint& endpoint, const char* why) {
  return Status::Unauthenticated(why, endpoint.name);
}

StatusOr<std::string_view> RequiredHeader(const Endpoint& endpoint, const Headers& headers,
                                          std::string_view name) {
  std::optional<std::string_view> value = HeaderValue(headers, name);
  if (!value || value->empty()) return Fail(endpoint, reason::kMissing);
  if (HeaderCount(headers, name) > 1 || value->size() > kMaxHeaderBytes) {
    return Fail(endpoint, reason::kMalformed);
  }
  return *value;
}

std::optional<Encoding> ParseEncoding(std::string_view name) {
  if (name == "hex") return Encoding::kHex;
  if (name == "base64") return Encoding::kBase64;
  return std::nullopt;
}

std::string EncodeMac(Encoding encoding, std::string_view mac) {
  return encoding == Encoding::kHex ? HexEncode(mac) : Base64Encode(mac);
}

namespace {

StatusOr<std::string> DecodeExactly(const Endpoint& endpoint, std::string_view text,
                                    Encoding encoding, size_t size) {
  std::optional<std::string> bytes =
      encoding == Encoding::kHex ? HexDecode(text) : Base64Decode(text);
  if (!bytes || bytes->size() != size) return Fail(endpoint, reason::kMalformed);
  return std::move(*bytes);
}

}  // namespace

StatusOr<std::string> DecodeMac(const Endpoint& endpoint, std::string_view text, Encoding encoding,
                                HashAlgorithm algorithm) {
  return DecodeExactly(endpoint, text, encoding, DigestSize(algorithm));
}

StatusOr<std::string> DecodeSignature(const Endpoint& endpoint, std::string_view text,
                                      Encoding encoding) {
  return DecodeExactly(endpoint, text, encoding, Ed25519PublicKey::kSignatureSize);
}

std::string SignedUrl(std::string public_url, std::string_view query) {
  if (!query.empty()) public_url.append("?").append(query);
  return public_url;
}

StatusOr<Claim> SingleMacClaim(const Endpoint& endpoint, const Headers& headers,
                               std::string_view name, std::string_view prefix, Encoding encoding,
                               HashAlgorithm algorithm, std::string message) {
  ASSIGN_OR_RETURN(std::string_view header, RequiredHeader(endpoint, headers, name));
  if (!header.starts_with(prefix)) return Fail(endpoint, reason::kMalformed);
  ASSIGN_OR_RETURN(std::string mac,
                   DecodeMac(endpoint, header.substr(prefix.size()), encoding, algorithm));
  Claim claim;
  claim.algorithm = algorithm;
  claim.message = std::move(message);
  claim.macs.push_back(std::move(mac));
  return claim;
}

StatusOr<Claim> ParameterClaim(const ParameterHeader& format, const Endpoint& endpoint,
                               const Headers& headers, std::string_view body, TimePoint now) {
  ASSIGN_OR_RETURN(std::string_view header, RequiredHeader(endpoint, headers, format.name));
  std::optional<std::string_view> timestamp;
  Claim claim;
  for (std::string_view element : Split(header, format.separator)) {
    const size_t eq = element.find('=');
    if (eq == std::string_view::npos) return Fail(endpoint, reason::kMalformed);
    const std::string_view key = element.substr(0, eq);
    const std::string_view value = element.substr(eq + 1);
    if (format.valid_key != nullptr && !format.valid_key(key)) {
      return Fail(endpoint, reason::kMalformed);
    }
    if (key == format.timestamp_key) {
      if (timestamp) return Fail(endpoint, reason::kMalformed);  // which one was signed?
      timestamp = value;
    } else if (key == format.mac_key) {
      if (claim.macs.size() == kMaxMacs) return Fail(endpoint, reason::kMalformed);
      ASSIGN_OR_RETURN(std::string mac,
                       DecodeMac(endpoint, value, Encoding::kHex, claim.algorithm));
      claim.macs.push_back(std::move(mac));
    }
  }
  if (!timestamp || claim.macs.empty()) return Fail(endpoint, reason::kMalformed);
  RETURN_IF_ERROR(CheckTimestamp(endpoint, *timestamp, now));
  claim.message = std::string(*timestamp) + format.joiner + std::string(body);
  return claim;
}

Headers ParameterSign(const ParameterHeader& format, const Secret& secret, std::string_view body,
                      TimePoint now) {
  const std::string ts = std::to_string(UnixSeconds(now));
  const std::string mac =
      Hmac(HashAlgorithm::kSha256, secret.value, ts + format.joiner + std::string(body));
  Headers headers;
  headers.emplace(format.name, std::string(format.timestamp_key) + "=" + ts + format.separator +
                                   std::string(format.mac_key) + "=" + HexEncode(mac));
  return headers;
}

int64_t UnixSeconds(TimePoint now) {
  return std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count();
}

StatusOr<int64_t> CheckTimestamp(const Endpoint& endpoint, std::string_view text, TimePoint now) {
  // 15 digits is tens of millions of years: no overflow below, and no sign, space or '+'
  // gets through (from_chars alone would accept a leading '-').
  if (text.empty() || text.size() > 15) return Fail(endpoint, reason::kMalformed);
  for (char c : text) {
    if (c < '0' || c > '9') return Fail(endpoint, reason::kMalformed);
  }
  int64_t ts = 0;
  std::from_chars(text.data(), text.data() + text.size(), ts);
  int64_t skew = UnixSeconds(now) - ts;
  if (skew < 0) skew = -skew;
  int64_t tolerance = std::chrono::duration_cast<std::chrono::seconds>(endpoint.tolerance).count();
  if (skew > tolerance) return Fail(endpoint, reason::kTimestamp);
  return ts;
}

void AddIfNotEmpty(Headers& headers, std::string_view name, std::string_view value) {
  if (!value.empty()) headers.emplace(std::string(name), std::string(value));
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace verify_internal

namespace {

using verify_internal::Scheme;

// The schemes, one per row of config/providers.h, in the rows' order (Provider's values).
#define HOOKBOX_SCHEME_ROW(id, ...) &verify_internal::id,
constexpr const Scheme* kSchemes[] = {HOOKBOX_PROVIDERS(HOOKBOX_SCHEME_ROW)};
#undef HOOKBOX_SCHEME_ROW

// nullptr for kNone (`verify: none`).
const Scheme* SchemeFor(Provider provider) {
  const auto index = static_cast<size_t>(provider);
  return index < std::size(kSchemes) ? kSchemes[index] : nullptr;
}

// Whether a secret matches the claim's message. Every secret and every offered MAC is
// compared, with no early exit, so the time taken does not say which secret (or which of
// several signatures) matched.
bool AnySecretMatches(const Scheme& scheme, const Endpoint& endpoint,
                      const verify_internal::Claim& claim) {
  bool matched = false;
  for (const Secret& secret : endpoint.secrets) {
    if (secret.value.empty()) continue;  // config refuses these; never let one sign
    if (secret.public_key) {
      for (const std::string& signature : claim.signatures) {
        matched |= secret.public_key->Verifies(claim.message, signature);
      }
      continue;
    }
    if (scheme.expected_mac == nullptr) continue;
    std::optional<std::string> expected = scheme.expected_mac(endpoint, claim, secret);
    if (!expected) continue;
    for (const std::string& mac : claim.macs) matched |= ConstantTimeEqual(*expected, mac);
  }
  return matched;
}

}  // namespace

Verifier::Verifier(const Endpoint& endpoint)
    : endpoint_(&endpoint), scheme_(SchemeFor(endpoint.provider)) {}

Status Verifier::Verify(const Headers& headers, std::string_view body, TimePoint now,
                        std::string_view query, Verified& out) const {
  out.body = body;
  if (scheme_ == nullptr) return Status::Ok();
  ASSIGN_OR_RETURN(verify_internal::Claim claim,
                   scheme_->parse(*endpoint_, headers, body, now, query));
  // The first message is the canonical one (public_url as configured); the others are
  // spellings of the same URL (twilio's port), so identity does not depend on which matched.
  std::string canonical = claim.message_is_identity ? claim.message : std::string();
  bool matched = AnySecretMatches(*scheme_, *endpoint_, claim);
  for (std::string& other : claim.other_messages) {
    claim.message = std::move(other);
    matched |= AnySecretMatches(*scheme_, *endpoint_, claim);
  }
  if (!matched) return verify_internal::Fail(*endpoint_, reason::kMismatch);
  out.signed_message = std::move(canonical);
  if (claim.body_at < out.signed_message.size()) {
    out.body = std::string_view(out.signed_message).substr(claim.body_at);
  }
  out.id_header = claim.id_header;
  return Status::Ok();
}

bool Verifier::TooManyFormFields(std::string_view body, std::string_view query) const {
  if (SpecOf(endpoint_->provider).body != ProviderSpec::BodyFormat::kForm) return false;
  if (scheme_->body_signed_by_hash != nullptr && scheme_->body_signed_by_hash(query)) return false;
  return CountFormFields(body) > kMaxFormFields;
}

Status Verify(const Endpoint& endpoint, const Headers& headers, std::string_view body,
              TimePoint now, std::string_view query, std::string* signed_message) {
  Verified verified;
  RETURN_IF_ERROR(Verifier(endpoint).Verify(headers, body, now, query, verified));
  if (signed_message != nullptr) *signed_message = std::move(verified.signed_message);
  return Status::Ok();
}

bool CanSign(const Secret& secret) { return !secret.public_key && !secret.value.empty(); }

Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  const Scheme* scheme = SchemeFor(endpoint.provider);
  if (scheme == nullptr || scheme->sign == nullptr || !CanSign(secret)) return {};
  Headers headers = scheme->sign(endpoint, secret, body, now, event_id, event_type);
  // The id and type the producer sends in headers of their own, where its row reads them by
  // default (github, shopify, gitlab); a header the scheme signs (standard's webhook-id) is
  // the scheme's.
  const ProviderSpec& provider = SpecOf(endpoint.provider);
  for (const auto& [source, value] :
       {std::pair{provider.ids.front(), event_id}, std::pair{provider.type, event_type}}) {
    if (source.from == FieldFrom::kHeader && !headers.contains(std::string(source.name))) {
      verify_internal::AddIfNotEmpty(headers, source.name, value);
    }
  }
  return headers;
}

}  // namespace hookbox
