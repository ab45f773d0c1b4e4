// Paddle Billing: `Paddle-Signature: ts=<unix ts>;h1=<hex>[;h1=<hex>...]`, HMAC-SHA256 of
// "<ts>:<body>" keyed with the notification destination's secret key (pdl_ntfset_...) as
// Paddle shows it. Several h1 entries appear while a secret is rotated; other keys are
// ignored, as Paddle's SDK does. The timestamp must be within the endpoint's tolerance
// (Paddle's SDK allows 5 s; hookbox's default 300 s, as for Stripe, leaves room for queues).
#include "verify/scheme.h"

namespace hookbox::verify_internal {
namespace {

constexpr ParameterHeader kFormat{"Paddle-Signature", ';', "ts", "h1", ':'};

}  // namespace

const Scheme kPaddle = {.parse = &ParseParameters<kFormat>,
                        .expected_mac = &HmacWithSecret,
                        .sign = &SignParameters<kFormat>};

}  // namespace hookbox::verify_internal
