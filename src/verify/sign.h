// The producer's side of verification, alone: the headers an endpoint's producer would send
// with a body. For code that signs and never verifies (the `http` handler re-signing what it
// forwards, `hookbox send`, tests), so it depends on this one function rather than on all of
// verify.h. Defined in src/verify/ next to each provider's checks (verify.cc dispatches),
// so what is signed here is exactly what Verify() accepts. Thread-safe: a pure function of
// its arguments (and, for ids a scheme must invent, of OpenSSL's random bytes).
#pragma once

#include <chrono>
#include <string_view>

#include "base/headers.h"
#include "config/config.h"

namespace hookbox {

using TimePoint = std::chrono::system_clock::time_point;

// The headers the endpoint's producer would send with `body`, signed with `secret` at `now`.
// `event_id` fills id headers where the scheme signs them (standard: webhook-id) or sends
// them (github: X-GitHub-Delivery, shopify: X-Shopify-Event-Id, gitlab: Idempotency-Key);
// `event_type` likewise for header-borne types (X-GitHub-Event, X-Shopify-Topic,
// X-Gitlab-Event). Empty strings leave those headers out. Empty headers when the secret
// cannot sign (CanSign).
Headers Sign(const Endpoint& endpoint, const Secret& secret, std::string_view body, TimePoint now,
             std::string_view event_id = {}, std::string_view event_type = {});

// False for a public key (standard `whpk_`, discord): only the producer holds the private
// key that signs. Such an endpoint can verify but hookbox cannot sign for it.
bool CanSign(const Secret& secret);

}  // namespace hookbox
