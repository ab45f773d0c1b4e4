// Slack: `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 of "v0:<ts>:<body>" keyed with the
// app's signing secret, where <ts> is `X-Slack-Request-Timestamp` and must be within the
// endpoint's tolerance.
#include <string>

#include "base/status_macros.h"
#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

constexpr std::string_view kHeader = "X-Slack-Signature";
constexpr std::string_view kTimestampHeader = "X-Slack-Request-Timestamp";

std::string Message(std::string_view timestamp, std::string_view body) {
  return "v0:" + std::string(timestamp) + ":" + std::string(body);
}

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  ASSIGN_OR_RETURN(std::string_view timestamp, RequiredHeader(endpoint, headers, kTimestampHeader));
  ASSIGN_OR_RETURN(Claim claim, SingleMacClaim(endpoint, headers, kHeader, "v0=", Encoding::kHex,
                                               HashAlgorithm::kSha256, Message(timestamp, body)));
  RETURN_IF_ERROR(CheckTimestamp(endpoint, timestamp, now));
  return claim;
}

Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  std::string ts = std::to_string(UnixSeconds(now));
  Headers headers;
  std::string mac = Hmac(HashAlgorithm::kSha256, secret.value, Message(ts, body));
  headers.emplace(kHeader, "v0=" + HexEncode(mac));
  headers.emplace(kTimestampHeader, ts);
  return headers;
}

}  // namespace

const Scheme kSlack = {&Parse, &HmacWithSecret, &Sign};

}  // namespace hookbox::verify_internal
