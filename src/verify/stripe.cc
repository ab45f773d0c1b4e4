// Stripe: `Stripe-Signature: t=<unix ts>,v1=<hex>[,v1=<hex>...]`, HMAC-SHA256 of
// "<ts>.<body>" keyed with the endpoint secret exactly as Stripe shows it (whsec_ prefix
// included). Several v1 entries appear while the sender rolls its secret; other schemes
// (v0 is a test-mode signature) are ignored. The timestamp must be within the endpoint's
// tolerance, which is what stops a captured delivery being replayed later.
#include <string>

#include "verify/providers.h"

namespace hookbox::verify_internal {
namespace {

constexpr std::string_view kHeader = "Stripe-Signature";

bool IsSchemeName(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  StatusOr<std::string_view> header = RequiredHeader(endpoint, headers, kHeader);
  if (!header.ok()) return header.status();
  std::optional<std::string_view> timestamp;
  Claim claim;
  for (std::string_view element : Split(*header, ',')) {
    size_t eq = element.find('=');
    if (eq == std::string_view::npos) return Fail(endpoint, reason::kMalformed);
    std::string_view key = element.substr(0, eq);
    std::string_view value = element.substr(eq + 1);
    if (!IsSchemeName(key)) return Fail(endpoint, reason::kMalformed);
    if (key == "t") {
      if (timestamp) return Fail(endpoint, reason::kMalformed);  // which one was signed?
      timestamp = value;
    } else if (key == "v1") {
      if (claim.macs.size() == kMaxMacs) return Fail(endpoint, reason::kMalformed);
      StatusOr<std::string> mac = DecodeMac(endpoint, value, Encoding::kHex, claim.algorithm);
      if (!mac.ok()) return mac.status();
      claim.macs.push_back(std::move(*mac));
    }
  }
  if (!timestamp || claim.macs.empty()) return Fail(endpoint, reason::kMalformed);
  StatusOr<int64_t> checked = CheckTimestamp(endpoint, *timestamp, now);
  if (!checked.ok()) return checked.status();
  claim.message = std::string(*timestamp) + "." + std::string(body);
  return claim;
}

Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  std::string ts = std::to_string(UnixSeconds(now));
  std::string mac = Hmac(HashAlgorithm::kSha256, secret.value, ts + "." + std::string(body));
  Headers headers;
  headers.emplace(kHeader, "t=" + ts + ",v1=" + HexEncode(mac));
  return headers;
}

}  // namespace

const Scheme kStripe = {&Parse, &HmacWithSecret, &Sign};

}  // namespace hookbox::verify_internal
