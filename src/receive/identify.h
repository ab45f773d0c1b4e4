// Identification: who is this event? Reads the event id, type, resource and sequence of a
// verified delivery from the provider's defaults or the endpoint's `header:NAME` /
// `body:/json/pointer` settings. The body is read with simdjson's on-demand parser (no DOM);
// a body that is not JSON is fine: body fields are then absent. A missing or empty id falls
// back to "sha256:<hex of the raw body>" (of the signed message for twilio and square; for
// twilio it is the default id, as its idempotency token is unsigned).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/headers.h"
#include "base/status.h"
#include "config/config.h"
#include "verify/verify.h"

namespace hookbox {

// Bounds on client-controlled identity fields. Longer ids or ids with control characters
// are refused with 400 (they are producer bugs; storing them would only hide the bug).
inline constexpr size_t kMaxIdentityField = 512;

struct Identity {
  std::string event_id;
  std::string id_source;  // "header:<name>", "body:<pointer>" or "sha256"
  std::string event_type;
  std::string resource_id;
  std::string sequence;                 // as delivered
  std::optional<int64_t> sequence_key;  // comparable; nullopt when absent or unreadable
  std::string body_sha256;              // hex
};

// The identity of a verified delivery: its body, signed message and signed id header are
// what Verify found (verify.h, Verified). InvalidArgument when a field breaks the bounds
// above, or for a delivery of a provider whose row requires its id (square: the body's
// /event_id) that has none under the default. When `verified.signed_message` is not empty
// (twilio, square), body_sha256 and the "sha256:" fallback id hash it rather than the body,
// so that every request carrying one signed message is one event (docs/SECURITY.md row 122).
StatusOr<Identity> Identify(const Endpoint& endpoint, const Headers& headers,
                            const Verified& verified);

// The provider's default id and type sources, from its row (config/providers.h; DESIGN.md,
// "Providers"). Several id sources are tried in order (shopify: X-Shopify-Event-Id, then
// X-Shopify-Webhook-Id). Standard lists both of its ids, but Identify reads only the one
// the signature covers (verify.h, Verified::id_header).
std::vector<FieldRef> DefaultIdSources(Provider provider);
FieldRef DefaultTypeSource(Provider provider);

// Integers as themselves; RFC 3339 timestamps as microseconds since the epoch.
std::optional<int64_t> SequenceKey(std::string_view value);

// A string field of a JSON body at an RFC 6901 pointer ("" when absent, not a string or
// number, or not JSON). Numbers come back as their JSON text.
std::optional<std::string> BodyField(std::string_view body, const std::string& pointer);

}  // namespace hookbox
