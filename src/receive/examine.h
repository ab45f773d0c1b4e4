// The provider's step of a delivery, between route and accept: verify the signature, answer
// a request that is not an event (the row's early answer: Slack's challenge, Discord's PING),
// read the body the signature stands for, and identify the event. One call, so the
// receiver's walk is route -> examine (the provider) -> accept, and what the endpoint's
// provider means for a delivery is decided here from its row (config/providers.h) and its
// scheme (src/verify/, bound to the endpoint once: verify.h, Verifier), never by the
// receiver naming a provider.
//
// Thread-safe: a pure function of its arguments.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/delivery.h"
#include "base/status.h"
#include "config/config.h"
#include "receive/identify.h"
#include "verify/verify.h"

namespace hookbox {

// What the provider made of one delivery. Filled in place (Examine), not moved: `body` may
// view into `signed_message`.
struct Examination {
  Examination() = default;
  Examination(const Examination&) = delete;
  Examination& operator=(const Examination&) = delete;

  // Not ok when the delivery is refused: Unauthenticated (verify.h's reason: 401, before
  // anything read the body) or InvalidArgument (an identity field out of bounds, or a
  // required id missing: 400).
  Status refused;
  // Set when the delivery is verified but is no event: answered, not stored. `outcome`
  // labels it ("challenge", "ping").
  std::optional<Answer> answered;
  std::string_view outcome;
  // Otherwise, the event: what verification proved (verify.h, Verified: the body the
  // signature stands for, the delivery's or square's as Square split its message, then
  // `body_resplit`); its identity.
  Verified verified;
  bool body_resplit = false;
  Identity identity;
};

// Examines `delivery`, routed to the endpoint `verifier` is bound to, at `now`, into `out`
// (default-constructed).
void Examine(const Verifier& verifier, const Delivery& delivery, TimePoint now, Examination& out);

}  // namespace hookbox
