// The provider's step of a delivery (see examine.h): verify, the row's early answer, the
// signed body, identify.
#include "receive/examine.h"

#include <nlohmann/json.hpp>

namespace hookbox {
namespace {

// The row's answer before accept when the delivery is the request it describes.
std::optional<Answer> EarlyAnswer(const ProviderSpec& provider, std::string_view body) {
  const auto& early = provider.answer;
  if (early.empty() || BodyField(body, std::string(early.when)).value_or("") != early.equals) {
    return std::nullopt;
  }
  if (early.echo.empty()) return Answer{early.status, "", {}};
  const std::string echo(early.echo);
  const nlohmann::json answer = {{echo, BodyField(body, "/" + echo).value_or("")}};
  return Answer{
      early.status, answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), {}};
}

}  // namespace

void Examine(const Verifier& verifier, const Delivery& delivery, TimePoint now, Examination& out) {
  // Verify: before anything reads the body or the inbox. The body the signature stands for
  // is the request's but for a square delivery with bytes moved across the `?`: that one is
  // read, and stored, as Square split its message, so it is the event it replays
  // (docs/SECURITY.md row 124).
  out.refused = verifier.Verify(delivery.headers, delivery.body, now, delivery.query, out.verified);
  if (!out.refused.ok()) return;
  const Endpoint& endpoint = verifier.endpoint();
  const ProviderSpec& provider = SpecOf(endpoint.provider);
  if ((out.answered = EarlyAnswer(provider, delivery.body))) {
    out.outcome = provider.answer.outcome;
    return;
  }
  out.body_resplit = out.verified.body != delivery.body;
  StatusOr<Identity> identity = Identify(endpoint, delivery.headers, out.verified);
  if (!identity.ok()) {
    out.refused = identity.status();
    return;
  }
  out.identity = std::move(*identity);
}

}  // namespace hookbox
