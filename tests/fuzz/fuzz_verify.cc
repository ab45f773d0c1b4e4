// libFuzzer harness: every provider's signature parser and verifier on hostile header values
// and bodies. The input picks a row of the provider table (config/providers.h), fills
// headers (named as the table and Sign() show its producers' headers, or by the input) and
// the body, and writes one of the endpoint's keys (parsed as the config loader parses public
// keys); Verify must return (never crash, never read out of bounds) and may accept only what
// was signed with the key. The harness names no provider (fuzz_providers.h).
//
// Input layout (FuzzedDataProvider; tests/fuzz/make_receive_seeds.py writes seeds in it):
// from the end, one byte each: the row, [public_url's shape, for rows that sign the URL],
// the hmac block's algorithm, encoding and prefix, header count, and per header "name from
// the input" (odd) then, if even, the name's index; then four bytes of Unix time (first
// byte most significant). From the front, each a string ended by "\" and another byte: the
// fuzzed key, per header [its name] and its value, the query; the rest is the body.
#include <fuzzer/FuzzedDataProvider.h>

#include "fuzz_providers.h"
#include "verify/verify.h"

using namespace hookbox;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> kHeaderNames = fuzz::AllHeaderNames();
  FuzzedDataProvider in(data, size);
  const ProviderSpec& row =
      Providers()[in.ConsumeIntegralInRange<size_t>(0, Providers().size() - 1)];
  Endpoint ep = fuzz::EndpointOf(row);
  const std::string fuzzed_key = in.ConsumeRandomLengthString(96);
  if (row.keys == fuzz::Keys::kEd25519Hex) {
    ep.secrets = {fuzz::Key(ep.provider, std::string(fuzz::kEd25519Hex)),
                  fuzz::Key(ep.provider, fuzzed_key)};
  } else {
    // A whsec_ secret (Keys::kStandard's HMAC key; the others' key as it is), a second
    // secret, a whpk_ public key (Keys::kStandard's; the others take it as a secret).
    ep.secrets = {{"value", std::string(fuzz::kSigningSecret)},
                  {"value", "second"},
                  fuzz::Key(ep.provider, std::string(fuzz::kEd25519Whpk)),
                  fuzz::Key(ep.provider, fuzzed_key)};
  }
  // The rows that sign the URL: shapes the loader accepts (no port, the scheme's default
  // port, user info, an IPv6 literal with a port). Picked for those rows only, so the
  // others' seeds keep their meaning.
  if (row.needs_public_url) {
    ep.public_url = in.PickValueInArray({"https://example.com/hooks/fuzz", "http://h",
                                         "https://u:p@[::1]:8443/a:b/c", "https://h.example:443"});
  }
  // Read for every row, so that the layout does not depend on it; set where the row's
  // scheme is the endpoint's block (the loader refuses a block elsewhere).
  const char* algorithm = in.PickValueInArray({"sha1", "sha256", "sha512"});
  const char* encoding = in.PickValueInArray({"hex", "base64"});
  const char* prefix = in.PickValueInArray({"", "sha256="});
  if (row.hmac_block) ep.hmac = {std::string(fuzz::kHmacHeader), algorithm, encoding, prefix};
  Headers headers;
  const int count = in.ConsumeIntegralInRange(0, 6);
  for (int i = 0; i < count; ++i) {
    std::string name = fuzz::PickHeaderName(in, kHeaderNames);
    headers.emplace(std::move(name), in.ConsumeRandomLengthString(256));
  }
  const TimePoint now{std::chrono::seconds(in.ConsumeIntegral<uint32_t>())};
  const std::string query = in.ConsumeRandomLengthString(128);
  const std::string body = in.ConsumeRemainingBytesAsString();
  (void)Verify(ep, headers, body, now, query);
  // A delivery signed by Sign() verifies; the fuzzer explores the round trip too.
  if (!CanSign(ep.secrets[0])) return 0;  // public keys: only the producer signs
  Headers signed_headers = Sign(ep, ep.secrets[0], body, now, "id", "type");
  if (!Verify(ep, signed_headers, body, now).ok()) __builtin_trap();
  return 0;
}
