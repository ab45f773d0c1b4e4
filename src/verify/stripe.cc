// Stripe: `Stripe-Signature: t=<unix ts>,v1=<hex>[,v1=<hex>...]`, HMAC-SHA256 of
// "<ts>.<body>" keyed with the endpoint secret exactly as Stripe shows it (whsec_ prefix
// included). Several v1 entries appear while the sender rolls its secret; other schemes
// (v0 is a test-mode signature) are ignored, but every key must be a scheme name. The
// timestamp must be within the endpoint's tolerance, which is what stops a captured delivery
// being replayed later.
#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

// Lower-case letters and digits, as Stripe's keys are.
bool IsSchemeName(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

constexpr ParameterHeader kFormat{"Stripe-Signature", ',', "t", "v1", '.', &IsSchemeName};

}  // namespace

const Scheme kStripe = {.parse = &ParseParameters<kFormat>,
                        .expected_mac = &HmacWithSecret,
                        .sign = &SignParameters<kFormat>};

}  // namespace hookbox::verify_internal
