// Tests for standard.cc (Standard Webhooks and Svix): v1 HMAC signatures with whsec_ secrets,
// and v1a Ed25519 signatures with whpk_ public keys (signed here with RFC 8032's test key).
#include <catch2/catch.hpp>

#include "base/crypto.h"
#include "config/secrets.h"
#include "tests/verify/testing.h"
#include "verify/verify.h"

namespace hookbox {
namespace {

using testing::At;
using testing::Outcome;
using testing::With;
using testing::Without;

constexpr int64_t kT = 1'700'000'000;
const std::string kBody = R"({"type":"user.created"})";
const std::string kKey = "0123456789abcdef0123456789abcdef";
const std::string kSecret = "whsec_" + Base64Encode(kKey);
const std::string kId = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";

std::string V1(const std::string& key = kKey, int64_t t = kT, const std::string& id = kId) {
  return "v1," + Base64Encode(
                     Hmac(HashAlgorithm::kSha256, key, id + "." + std::to_string(t) + "." + kBody));
}

Headers Delivery(const std::string& signature, const std::string& prefix = "webhook-") {
  return {{prefix + "id", kId},
          {prefix + "timestamp", std::to_string(kT)},
          {prefix + "signature", signature}};
}

std::string Check(const Headers& headers, TimePoint now = At(kT),
                  const std::string& secret = kSecret) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStandard, {secret});
  return Outcome(Verify(endpoint, headers, kBody, now));
}

// The header Verify names as the one whose id the signature covers (Verified::id_header);
// "" when the delivery does not verify.
std::string IdHeader(const Headers& headers) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStandard, {kSecret});
  Verified verified;
  if (!Verifier(endpoint).Verify(headers, kBody, At(kT), "", verified).ok()) return "";
  CHECK(verified.body == kBody);
  CHECK(verified.signed_message.empty());
  return std::string(verified.id_header);
}

TEST_CASE("standard: Sign then Verify", "[standard]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStandard, {kSecret});
  Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(kT), kId, "user.created");
  CHECK(testing::First(headers, "webhook-id") == kId);
  CHECK(testing::First(headers, "webhook-timestamp") == std::to_string(kT));
  CHECK(testing::First(headers, "webhook-signature") == V1());
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(kT))) == "ok");

  // Without an event id, Sign makes up a fresh msg_ id (and signs that).
  Headers a = Sign(endpoint, endpoint.secrets[0], kBody, At(kT));
  Headers b = Sign(endpoint, endpoint.secrets[0], kBody, At(kT));
  CHECK(testing::First(a, "webhook-id").starts_with("msg_"));
  CHECK(testing::First(a, "webhook-id") != testing::First(b, "webhook-id"));
  CHECK(Outcome(Verify(endpoint, a, kBody, At(kT))) == "ok");
}

TEST_CASE("standard: svix-* header names", "[standard]") {
  CHECK(Check(Delivery(V1(), "svix-")) == "ok");
  CHECK(Check(Delivery(V1("wrong key 0123456789"), "svix-")) == reason::kMismatch);
  // Names are not mixed: a webhook-signature takes its id and timestamp from webhook-*.
  Headers mixed = {
      {"webhook-signature", V1()}, {"svix-id", kId}, {"svix-timestamp", std::to_string(kT)}};
  CHECK(Check(mixed) == reason::kMissing);
}

TEST_CASE("standard: the signed family alone; the other family's headers change nothing",
          "[standard]") {
  // A svix-signed delivery replayed with added webhook-id / webhook-timestamp is verified
  // with the svix-* headers, and names svix-id as the id the signature covers, which is
  // what Identify reads the event id from.
  Headers replay = Delivery(V1(), "svix-");
  replay.emplace("webhook-id", "anything");
  replay.emplace("webhook-timestamp", "1");
  CHECK(StandardHeaderPrefix(replay) == "svix-");
  CHECK(Check(replay) == "ok");
  CHECK(IdHeader(replay) == "svix-id");
  // A webhook-signature picks webhook-*, whatever svix-* headers come along.
  Headers both = Delivery(V1());
  for (const auto& [k, v] : Delivery("v1,AAAA", "svix-")) both.emplace(k, v);
  CHECK(StandardHeaderPrefix(both) == "webhook-");
  CHECK(Check(both) == "ok");
  CHECK(IdHeader(both) == "webhook-id");
  CHECK(IdHeader(Delivery(V1())) == "webhook-id");
  // Neither signature: webhook-* (verification then answers missing signature).
  CHECK(StandardHeaderPrefix({{"svix-id", kId}}) == "webhook-");
  CHECK(Check({{"svix-id", kId}, {"svix-timestamp", std::to_string(kT)}}) == reason::kMissing);
}

TEST_CASE("standard: secret forms", "[standard]") {
  // No whsec_ prefix: not a key (the loader refuses it; a bare public key must not sign v1).
  CHECK(Check(Delivery(V1()), At(kT), Base64Encode(kKey)) == reason::kMismatch);
  CHECK(Check(Delivery(V1()), At(kT), "whsec_" + kKey) == reason::kMismatch);  // not base64
  CHECK(Check(Delivery(V1()), At(kT), "whsec_not base64!") == reason::kMismatch);
  CHECK(Check(Delivery(V1()), At(kT), "whsec_") == reason::kMismatch);
  // The raw secret string is not the key.
  CHECK(Check(Delivery(V1(kSecret)), At(kT)) == reason::kMismatch);

  // A bad secret beside a good one does not get in the way of rotation.
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStandard, {"whsec_@@@", kSecret});
  CHECK(Outcome(Verify(endpoint, Delivery(V1()), kBody, At(kT))) == "ok");
  // And Sign with a bad secret sends no signature rather than a wrong one.
  Headers headers = Sign(endpoint, endpoint.secrets[0], kBody, At(kT), kId);
  CHECK(headers.count("webhook-signature") == 0);
  CHECK(Outcome(Verify(endpoint, headers, kBody, At(kT))) == reason::kMissing);
}

TEST_CASE("standard: padding is not part of the key", "[standard]") {
  // A 32-byte key: its base64 ends in one '='. Signed with either spelling, verified
  // against the other, and `hookbox send` (Sign) signs with the unpadded one.
  const std::string key = kKey;
  const std::string padded = "whsec_" + Base64Encode(key);
  REQUIRE(padded.ends_with("="));
  REQUIRE_FALSE(padded.ends_with("=="));
  const std::string unpadded = padded.substr(0, padded.size() - 1);
  for (const auto& [signer, config] :
       {std::pair{padded, unpadded}, std::pair{unpadded, padded}, std::pair{unpadded, unpadded}}) {
    INFO(signer << " -> " << config);
    Endpoint sending = testing::MakeEndpoint(Provider::kStandard, {signer});
    Headers headers = Sign(sending, sending.secrets[0], kBody, At(kT), kId);
    REQUIRE(headers.count("webhook-signature") == 1);
    CHECK(testing::First(headers, "webhook-signature") == V1(key));
    CHECK(Check(headers, At(kT), config) == "ok");
  }
  // Two '=' (a 31-byte key).
  const std::string key2 = kKey.substr(1);
  std::string b64 = Base64Encode(key2);
  REQUIRE(b64.ends_with("=="));
  CHECK(Check(Delivery(V1(key2)), At(kT), "whsec_" + b64.substr(0, b64.size() - 2)) == "ok");
  CHECK(Check(Delivery(V1(key2)), At(kT), "whsec_" + b64.substr(0, b64.size() - 1)) ==
        reason::kMismatch);  // half the padding is not base64
}

TEST_CASE("standard: the config accepts exactly the secrets verification can use", "[standard]") {
  // No secret may pass check-config and then never verify. Every short text over an alphabet
  // with the corner cases (padding, bad bits, other characters).
  const std::string alphabet = "AQgw=+/-_ ";
  std::vector<std::string> texts = {""};
  for (int len = 1; len <= 5; ++len) {
    std::vector<std::string> longer;
    for (const std::string& t : texts) {
      if (t.size() + 1 != static_cast<size_t>(len)) continue;
      for (char c : alphabet) longer.push_back(t + c);
    }
    texts.insert(texts.end(), longer.begin(), longer.end());
  }
  int usable = 0;
  for (const std::string& text : texts) {
    const std::string secret = "whsec_" + text;
    INFO(secret);
    Endpoint endpoint = testing::MakeEndpoint(Provider::kStandard, {secret});
    const bool signs =
        Sign(endpoint, endpoint.secrets[0], kBody, At(kT), kId).count("webhook-signature") == 1;
    CHECK(config_internal::IsStandardWebhooksSecret(secret) == signs);
    usable += signs;
  }
  CHECK(usable > 100);
}

TEST_CASE("standard: rotation and several signatures", "[standard]") {
  const std::string other = "another 32-byte key, for testing";
  Endpoint endpoint =
      testing::MakeEndpoint(Provider::kStandard, {"whsec_" + Base64Encode(other), kSecret});
  CHECK(Outcome(Verify(endpoint, Delivery(V1()), kBody, At(kT))) == "ok");
  CHECK(Outcome(Verify(endpoint, Delivery(V1(other)), kBody, At(kT))) == "ok");

  std::string wrong = V1("not the key");
  CHECK(Check(Delivery(wrong + " " + V1())) == "ok");
  CHECK(Check(Delivery(V1() + " " + wrong)) == "ok");
  CHECK(Check(Delivery("v1b,c2lnbmF0dXJl " + V1())) == "ok");  // other versions ignored
  CHECK(Check(Delivery("v2," + V1().substr(3) + " " + V1())) == "ok");
  CHECK(Check(Delivery(wrong)) == reason::kMismatch);
  CHECK(Check(Delivery("v1b,c2lnbmF0dXJl")) == reason::kMalformed);  // nothing to check
}

TEST_CASE("standard: timestamp tolerance", "[standard]") {
  CHECK(Check(Delivery(V1()), At(kT + 300)) == "ok");
  CHECK(Check(Delivery(V1()), At(kT + 301)) == reason::kTimestamp);
  CHECK(Check(Delivery(V1()), At(kT - 300)) == "ok");
  CHECK(Check(Delivery(V1()), At(kT - 301)) == reason::kTimestamp);
  // The timestamp is signed: moving it (within tolerance) breaks the signature.
  CHECK(Check(With(Delivery(V1()), "webhook-timestamp", std::to_string(kT + 1))) ==
        reason::kMismatch);
  // So is the id.
  CHECK(Check(With(Delivery(V1()), "webhook-id", kId + "x")) == reason::kMismatch);
}

TEST_CASE("standard: missing headers", "[standard]") {
  CHECK(Check({}) == reason::kMissing);
  for (const char* name : {"webhook-id", "webhook-timestamp", "webhook-signature"}) {
    INFO(name);
    CHECK(Check(Without(Delivery(V1()), name)) == reason::kMissing);
    CHECK(Check(With(Delivery(V1()), name, "")) == reason::kMissing);
  }
}

TEST_CASE("standard: malformed signature and timestamp headers", "[standard]") {
  std::string b64 = V1().substr(3);
  for (const std::string& bad : std::vector<std::string>{
           b64,                                                       // no version
           "v1" + b64, "v1,", "v1," + b64.substr(0, b64.size() - 1),  // broken padding
           "v1," + b64.substr(4),                                     // 29 bytes
           "v1," + Base64Encode(std::string(33, 'x')), "v1," + Base64Encode(std::string(64, 'x')),
           "v1,@@@@", "v1," + b64.substr(0, 10) + " " + b64.substr(10), "v1, " + b64,
           V1() + "  " + V1(),  // empty entry
           V1() + " ", " " + V1(), V1() + "\t", "v1," + b64 + "\n",
           V1() + "," + b64,                    // comma-joined
           "v1,Zm9v" + std::string(9000, 'A'),  // huge
       }) {
    INFO(bad);
    CHECK(Check(Delivery(bad)) == reason::kMalformed);
  }
  std::string many;
  for (int i = 0; i < 17; ++i) many += (i ? " " : "") + V1();
  CHECK(Check(Delivery(many)) == reason::kMalformed);

  for (const char* bad_ts : {"abc", "-1", "+1700000000", "1700000000.0", " 1700000000", "1e9",
                             "99999999999999999999", "0x6553f100"}) {
    INFO(bad_ts);
    CHECK(Check(With(Delivery(V1()), "webhook-timestamp", bad_ts)) == reason::kMalformed);
  }
}

const std::string kPublic = "whpk_" + Base64Encode(testing::kEd25519Public);

std::string V1a(const std::string& seed = testing::kEd25519Seed, int64_t t = kT,
                const std::string& body = kBody) {
  return "v1a," +
         Base64Encode(testing::Ed25519Sign(seed, kId + "." + std::to_string(t) + "." + body));
}

std::string CheckWith(std::vector<std::string> secrets, const Headers& headers,
                      const std::string& body = kBody) {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStandard, std::move(secrets));
  return Outcome(Verify(endpoint, headers, body, At(kT)));
}

TEST_CASE("standard v1a: Ed25519 signatures against whpk_ public keys", "[standard]") {
  REQUIRE(V1a().size() == 4 + 88);  // 64 bytes of signature
  CHECK(CheckWith({kPublic}, Delivery(V1a())) == "ok");
  // Padding is optional in the key, as in whsec_ secrets.
  std::string unpadded = kPublic;
  while (unpadded.back() == '=') unpadded.pop_back();
  CHECK(CheckWith({unpadded}, Delivery(V1a())) == "ok");
  // One header may carry both kinds, in either order, and other versions are ignored.
  CHECK(CheckWith({kPublic}, Delivery(V1() + " " + V1a())) == "ok");
  CHECK(CheckWith({kPublic}, Delivery(V1a() + " v2,abc")) == "ok");
}

TEST_CASE("standard v1a: one endpoint with whsec_ and whpk_ verifies v1 and v1a alike",
          "[standard]") {
  const std::vector<std::string> both = {kSecret, kPublic};
  CHECK(CheckWith(both, Delivery(V1())) == "ok");
  CHECK(CheckWith(both, Delivery(V1a())) == "ok");
  // A key only verifies its own kind of signature.
  CHECK(CheckWith({kPublic}, Delivery(V1())) == reason::kMismatch);
  // What row 75 claims: a v1 HMAC keyed with the public key's own bytes (what anyone holding
  // the public key could compute, had it been taken for an HMAC key), with its base64, or
  // with the whpk_ text itself, does not verify against that whpk_ key.
  CHECK(CheckWith({kPublic}, Delivery(V1(testing::kEd25519Public))) == reason::kMismatch);
  CHECK(CheckWith({kPublic}, Delivery(V1(Base64Encode(testing::kEd25519Public)))) ==
        reason::kMismatch);
  CHECK(CheckWith({kPublic}, Delivery(V1(kPublic))) == reason::kMismatch);
  // Nor against the same bytes pasted without whpk_ (refused at load; no key here either).
  CHECK(CheckWith({Base64Encode(testing::kEd25519Public)}, Delivery(V1(testing::kEd25519Public))) ==
        reason::kMismatch);
  CHECK(CheckWith({kSecret}, Delivery(V1a())) == reason::kMismatch);
}

TEST_CASE("standard v1a: one byte changed anywhere it signs fails", "[standard]") {
  CHECK(CheckWith({kPublic}, Delivery(V1a()), kBody + " ") == reason::kMismatch);
  CHECK(CheckWith({kPublic}, With(Delivery(V1a()), "webhook-id", kId + "x")) == reason::kMismatch);
  CHECK(CheckWith({kPublic}, With(Delivery(V1a()), "webhook-timestamp", std::to_string(kT + 1))) ==
        reason::kMismatch);
  std::string sig = V1a();
  sig[10] = sig[10] == 'A' ? 'B' : 'A';
  CHECK(CheckWith({kPublic}, Delivery(sig)) == reason::kMismatch);
  // Another key pair.
  const std::string other_seed(32, '\x07');
  CHECK(CheckWith({kPublic}, Delivery(V1a(other_seed))) == reason::kMismatch);
  CHECK(CheckWith({"whpk_" + Base64Encode(testing::Ed25519PublicOf(other_seed))},
                  Delivery(V1a(other_seed))) == "ok");
  // Old signatures are refused before the key is used.
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStandard, {kPublic});
  CHECK(Outcome(Verify(endpoint, Delivery(V1a()), kBody, At(kT + 301))) == reason::kTimestamp);
}

TEST_CASE("standard v1a: malformed entries", "[standard]") {
  const std::string b64 = V1a().substr(4);
  for (const std::string& bad : std::vector<std::string>{
           "v1a,", "v1a,@@@@", "v1a," + b64.substr(0, b64.size() - 1),
           "v1a," + Base64Encode(std::string(63, 'x')), "v1a," + Base64Encode(std::string(65, 'x')),
           "v1a," + HexEncode(testing::Ed25519Sign(testing::kEd25519Seed, "m"))}) {
    INFO(bad);
    CHECK(CheckWith({kPublic}, Delivery(bad)) == reason::kMalformed);
  }
  std::string many;
  for (int i = 0; i < 17; ++i) many += (i ? " " : "") + (i % 2 ? V1() : V1a());
  CHECK(CheckWith({kPublic}, Delivery(many)) == reason::kMalformed);
}

TEST_CASE("standard v1a: the config takes exactly the whpk_ keys that verify", "[standard]") {
  CHECK(config_internal::PublicKeyOf(Provider::kStandard, kPublic));
  CHECK_FALSE(config_internal::PublicKeyOf(Provider::kStandard, "whpk_"));
  CHECK_FALSE(config_internal::PublicKeyOf(Provider::kStandard, "whpk_@@@@"));
  CHECK_FALSE(config_internal::PublicKeyOf(Provider::kStandard,
                                           "whpk_" + Base64Encode(std::string(31, 'k'))));
  CHECK_FALSE(config_internal::PublicKeyOf(Provider::kStandard,
                                           "whpk_" + Base64Encode(std::string(64, 'k'))));
  CHECK_FALSE(config_internal::PublicKeyOf(Provider::kStandard, kSecret));  // a whsec_
  CHECK_FALSE(config_internal::PublicKeyOf(Provider::kGithub, kPublic));
}

TEST_CASE("standard v1a: hookbox cannot sign with a public key", "[standard]") {
  Endpoint endpoint = testing::MakeEndpoint(Provider::kStandard, {kPublic, kSecret});
  CHECK_FALSE(CanSign(endpoint.secrets[0]));
  CHECK(Sign(endpoint, endpoint.secrets[0], kBody, At(kT), kId).empty());
  CHECK(CanSign(endpoint.secrets[1]));
  CHECK(Outcome(Verify(endpoint, Sign(endpoint, endpoint.secrets[1], kBody, At(kT), kId), kBody,
                       At(kT))) == "ok");
}

}  // namespace
}  // namespace hookbox
