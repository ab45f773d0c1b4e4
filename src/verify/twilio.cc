// Twilio: `X-Twilio-Signature: <base64 HMAC-SHA1>` keyed with the account's auth token (or
// HMAC-SHA256 keyed with a SharedKey secret, when X-Twilio-Webhooks-Signature-Settings says
// `algorithm=HMAC_SHA256`, as Twilio's SDK reads it). The signed text starts with the URL Twilio
// called: the endpoint's public_url, then "?" and the request's query byte for byte when it has
// one. Then, as Twilio's SDK decides it:
// - the query carries `bodySHA256=<hex>` (Twilio's JSON requests): the URL alone is
//   signed, and the body must hash to that value (else a mismatch);
// - otherwise the body is application/x-www-form-urlencoded (every other Twilio request):
//   each field is appended as name followed by value, decoded, sorted by name and, for a
//   name given several times, by value (byte order), a value repeated under one name
//   counted once (the SDK makes a set of them).
// Twilio has signed the URL both with and without its port, and its SDK accepts either: so
// does hookbox (public_url without a port and with its port, or the scheme's default).
// No signed timestamp: replays are caught by dedupe on the hash of the signed message, not
// of the body (a reordered or re-encoded form signs alike). I-Twilio-Idempotency-Token is
// not the default id (its row has none): Twilio does not sign it, so a captured request resent
// under a fresh token would be a new event and run its handlers again.
#include <algorithm>
#include <string>

#include "base/ascii.h"
#include "base/form.h"
#include "base/status_macros.h"
#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

constexpr std::string_view kHeader = "X-Twilio-Signature";
constexpr std::string_view kSettings = "X-Twilio-Webhooks-Signature-Settings";

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// The MAC's algorithm: the settings header's `algorithm=`, HMAC_SHA1 when it names none.
// The header is not signed, but it only picks between two MACs under the same key.
std::optional<HashAlgorithm> Algorithm(const Headers& headers) {
  std::string_view algorithm;
  if (std::optional<std::string_view> settings = HeaderValue(headers, kSettings)) {
    for (std::string_view part : Split(*settings, ',')) {
      const size_t eq = part.find('=');
      if (eq != std::string_view::npos && Trim(part.substr(0, eq)) == "algorithm" &&
          !Trim(part.substr(eq + 1)).empty()) {
        algorithm = Trim(part.substr(eq + 1));
        break;
      }
    }
  }
  if (algorithm.empty() || EqualsIgnoringAsciiCase(algorithm, "HMAC_SHA1")) {
    return HashAlgorithm::kSha1;
  }
  if (EqualsIgnoringAsciiCase(algorithm, "HMAC_SHA256")) return HashAlgorithm::kSha256;
  return std::nullopt;
}

// The form's fields as signed after the URL: sorted, each as name then value.
std::string SortedFields(std::string_view body) {
  FormFields fields = ParseUrlEncoded(body);
  std::sort(fields.begin(), fields.end());
  fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
  std::string text;
  for (const auto& [name, value] : fields) text += name + value;
  return text;
}

// public_url without its port and with one (its own, else the scheme's default), split as
// Twilio's SDK splits it: user info before the authority's last '@', a port after the ':'
// that follows any ']' of an IPv6 literal. public_url was checked at load: http:// or
// https://, a host, no query.
std::pair<std::string, std::string> PortSpellings(const std::string& url) {
  const size_t authority = url.find("://") + 3;
  const size_t end = std::min(url.find('/', authority), url.size());
  const size_t at = url.rfind('@', end - 1);
  size_t host = at == std::string::npos || at < authority ? authority : at + 1;
  const size_t bracket = url.rfind(']', end - 1);
  if (bracket != std::string::npos && bracket >= host) host = bracket + 1;
  const size_t colon = std::min(url.find(':', host), end);
  std::string without = url.substr(0, colon) + url.substr(end);
  if (colon != end) return {std::move(without), url};
  std::string with = url;
  with.insert(end, url.starts_with("https://") ? ":443" : ":80");
  return {std::move(without), std::move(with)};
}

StatusOr<Claim> Parse(const Endpoint& endpoint, const Headers& headers, std::string_view body,
                      TimePoint now, std::string_view query) {
  // Missing before malformed: no signature at all is the more useful answer.
  RETURN_IF_ERROR(RequiredHeader(endpoint, headers, kHeader));
  std::optional<HashAlgorithm> algorithm = Algorithm(headers);
  if (!algorithm || HeaderCount(headers, kSettings) > 1) {
    return Fail(endpoint, reason::kMalformed);
  }
  ASSIGN_OR_RETURN(Claim claim, SingleMacClaim(endpoint, headers, kHeader, "", Encoding::kBase64,
                                               *algorithm, ""));
  std::string signed_after_url;
  if (std::optional<std::string> hash = FormValue(ParseUrlEncoded(query), "bodySHA256")) {
    // The body is bound to the URL by its hash; a body that does not match is not the one
    // Twilio sent, whatever the signature says. The hash is public: no secret is involved.
    if (!ConstantTimeEqual(*hash, Sha256Hex(body))) return Fail(endpoint, reason::kMismatch);
  } else {
    signed_after_url = SortedFields(body);
  }
  auto [without_port, with_port] = PortSpellings(endpoint.public_url);
  claim.message = SignedUrl(std::move(without_port), query) + signed_after_url;
  claim.other_messages.push_back(SignedUrl(std::move(with_port), query) + signed_after_url);
  claim.message_is_identity = true;
  return claim;
}

// Signs a form body for public_url without a query (what `hookbox send` posts, given no
// --url query), as Twilio signs its form requests.
Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id, std::string_view event_type) {
  Headers headers;
  headers.emplace(kHeader, Base64Encode(Hmac(HashAlgorithm::kSha1, secret.value,
                                             endpoint.public_url + SortedFields(body))));
  return headers;
}

// Twilio's JSON requests: the query's bodySHA256 binds the body, which is not parsed.
bool BodySignedByHash(std::string_view query) {
  return FormValue(ParseUrlEncoded(query), "bodySHA256").has_value();
}

}  // namespace

const Scheme kTwilio = {.parse = &Parse,
                        .expected_mac = &HmacWithSecret,
                        .sign = &Sign,
                        .body_signed_by_hash = &BodySignedByHash};

}  // namespace hookbox::verify_internal
