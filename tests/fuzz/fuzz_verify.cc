// libFuzzer harness: every provider's signature parser and verifier on hostile header values
// and bodies. The input picks a provider, fills its headers and the body; Verify must return
// (never crash, never read out of bounds) and may accept only what was signed with the key.
#include <fuzzer/FuzzedDataProvider.h>

#include "verify/verify.h"

using namespace hookbox;

namespace {

const char* const kHeaderNames[] = {"Stripe-Signature",  "X-Hub-Signature-256",
                                    "X-Hub-Signature",   "webhook-id",
                                    "webhook-timestamp", "webhook-signature",
                                    "svix-id",           "svix-timestamp",
                                    "svix-signature",    "X-Shopify-Hmac-Sha256",
                                    "X-Slack-Signature", "X-Slack-Request-Timestamp",
                                    "X-Gitlab-Token",    "X-Signature",
                                    "Paddle-Signature",  "x-square-hmacsha256-signature"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  static const Provider kProviders[] = {Provider::kStripe,  Provider::kGithub, Provider::kStandard,
                                        Provider::kShopify, Provider::kSlack,  Provider::kGitlab,
                                        Provider::kPaddle,  Provider::kSquare, Provider::kHmac};
  Endpoint ep;
  ep.name = "fuzz";
  ep.provider = in.PickValueInArray(kProviders);
  ep.secrets = {{"value", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, {"value", "second"}};
  ep.hmac.header = "X-Signature";
  ep.public_url = "https://example.com/hooks/square";
  ep.hmac.algorithm = in.PickValueInArray({"sha1", "sha256", "sha512"});
  ep.hmac.encoding = in.PickValueInArray({"hex", "base64"});
  ep.hmac.prefix = in.PickValueInArray({"", "sha256="});
  Headers headers;
  const int count = in.ConsumeIntegralInRange(0, 6);
  for (int i = 0; i < count; ++i) {
    headers.emplace(in.PickValueInArray(kHeaderNames), in.ConsumeRandomLengthString(256));
  }
  const TimePoint now{std::chrono::seconds(in.ConsumeIntegral<uint32_t>())};
  const std::string query = in.ConsumeRandomLengthString(64);
  const std::string body = in.ConsumeRemainingBytesAsString();
  (void)Verify(ep, headers, body, now, query);
  // A delivery signed by Sign() verifies; the fuzzer explores the round trip too.
  Headers signed_headers = Sign(ep, ep.secrets[0], body, now, "id", "type");
  if (!Verify(ep, signed_headers, body, now).ok()) __builtin_trap();
  return 0;
}
