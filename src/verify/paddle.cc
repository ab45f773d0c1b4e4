// Paddle Billing: `Paddle-Signature: ts=<unix ts>;h1=<hex>[;h1=<hex>...]`, HMAC-SHA256 of
// "<ts>:<body>" keyed with the notification destination's secret key (pdl_ntfset_...) as
// Paddle shows it. Several h1 entries appear while a secret is rotated; other keys are
// ignored, as Paddle's SDK does. The timestamp must be within the endpoint's tolerance
// (Paddle's SDK allows 5 s; hookbox's default 300 s, as for Stripe, leaves room for queues).
#include <string>

#include "verify/providers.h"

namespace hookbox::verify_internal {
namespace {

constexpr std::string_view kHeader = "Paddle-Signature";

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  StatusOr<std::string_view> header = RequiredHeader(endpoint, headers, kHeader);
  if (!header.ok()) return header.status();
  std::optional<std::string_view> timestamp;
  Claim claim;
  for (std::string_view element : Split(*header, ';')) {
    const size_t eq = element.find('=');
    if (eq == std::string_view::npos) return Fail(endpoint, reason::kMalformed);
    const std::string_view key = element.substr(0, eq);
    const std::string_view value = element.substr(eq + 1);
    if (key == "ts") {
      if (timestamp) return Fail(endpoint, reason::kMalformed);  // which one was signed?
      timestamp = value;
    } else if (key == "h1") {
      if (claim.macs.size() == kMaxMacs) return Fail(endpoint, reason::kMalformed);
      StatusOr<std::string> mac = DecodeMac(endpoint, value, Encoding::kHex, claim.algorithm);
      if (!mac.ok()) return mac.status();
      claim.macs.push_back(std::move(*mac));
    }
  }
  if (!timestamp || claim.macs.empty()) return Fail(endpoint, reason::kMalformed);
  StatusOr<int64_t> checked = CheckTimestamp(endpoint, *timestamp, now);
  if (!checked.ok()) return checked.status();
  claim.message = std::string(*timestamp) + ":" + std::string(body);
  return claim;
}

Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  const std::string ts = std::to_string(UnixSeconds(now));
  const std::string mac = Hmac(HashAlgorithm::kSha256, secret.value, ts + ":" + std::string(body));
  Headers headers;
  headers.emplace(kHeader, "ts=" + ts + ";h1=" + HexEncode(mac));
  return headers;
}

}  // namespace

const Scheme kPaddle = {&Parse, &HmacWithSecret, &Sign};

}  // namespace hookbox::verify_internal
