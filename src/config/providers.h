// The providers, one row each: everything hookbox knows about a producer besides how its
// signature is computed (that is the provider's file, src/verify/<name>.cc, whose `Scheme`
// is named after the row). Config, verify, identify, the receiver and `hookbox send` read
// the row; none of them names a provider. Adding a provider is its file plus one row here
// (DESIGN.md, Providers).
//
// The table is here, in config/, for the reason handler_kinds.h is: the loader needs the
// names, the key kinds and `public_url`, and config/ may not include verify/ (which is built
// on it). verify.cc expands the same rows into its table of schemes, so a row without its
// file does not link, and a file without its row is never used.
//
// An X-macro: HOOKBOX_PROVIDERS(ROW) expands to ROW(kName, .field = value, ...) once per
// provider; the enumerator names Provider's value and the verify_internal::Scheme in the
// provider's file; the rest initialise a ProviderSpec, in the order its fields are declared.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

namespace hookbox {

// Where a field of a delivery comes from (FieldRef::From in config.h is this type).
enum class FieldFrom { kNone, kHeader, kBody, kForm };

namespace provider_rows {

// A row's field source: FieldRef's constant twin (a FieldRef holds a std::string).
struct Source {
  FieldFrom from = FieldFrom::kNone;
  std::string_view name{};
  constexpr bool empty() const { return from == FieldFrom::kNone; }
};

constexpr Source Header(std::string_view name) { return {FieldFrom::kHeader, name}; }
constexpr Source Body(std::string_view pointer) { return {FieldFrom::kBody, pointer}; }

// What an entry of an endpoint's `secrets` is (config/secrets.cc checks and parses it once, at
// load: a config that loads verifies with every entry).
enum class Keys {
  kSecret,      // a shared secret, used as it is (the HMAC key)
  kToken,       // a shared secret the producer sends itself, in `token_header`
  kStandard,    // Standard Webhooks: `whsec_` + base64 (HMAC key) or `whpk_` + base64 (Ed25519)
  kEd25519Hex,  // an Ed25519 public key as 64 hex digits: verifies, never signs
};

// What the producer posts: JSON, or an application/x-www-form-urlencoded form whose parsed
// fields the signature covers (so the receiver bounds their count before verifying, and
// `hookbox send` posts FILE as a form).
enum class BodyFormat { kJson, kForm };

// A verified request that is not an event, answered before accept and not stored (Slack's
// url_verification challenge, Discord's PING): when the body's `when` pointer reads `equals`,
// the answer is `status` with, if `echo` is set, {"<echo>": the body's /<echo>} (else no
// body); `outcome` labels the log line and the deliveries metric.
struct EarlyAnswer {
  std::string_view when{};
  std::string_view equals{};
  int status = 0;
  std::string_view echo{};
  std::string_view outcome{};
  constexpr bool empty() const { return when.empty(); }
};

}  // namespace provider_rows

// The rows. Defaults (a field a row leaves out): a shared secret (kSecret), no public_url,
// no `hmac` block, no default id (the body's SHA-256) or type, no signed timestamp, a JSON
// body, no early answer.
#define HOOKBOX_PROVIDERS(ROW)                                                            \
  ROW(kStripe, .name = "stripe", .ids = {Body("/id")}, .type = Body("/type"),             \
      .timestamp = "t= of Stripe-Signature")                                              \
  ROW(kGithub, .name = "github", .ids = {Header("X-GitHub-Delivery")},                    \
      .type = Header("X-GitHub-Event"))                                                   \
  ROW(kStandard, .name = "standard", .keys = Keys::kStandard,                             \
      .ids = {Header("webhook-id"), Header("svix-id")}, .type = Body("/type"),            \
      .timestamp = "webhook-timestamp (svix-timestamp)")                                  \
  ROW(kShopify, .name = "shopify",                                                        \
      .ids = {Header("X-Shopify-Event-Id"), Header("X-Shopify-Webhook-Id")},              \
      .type = Header("X-Shopify-Topic"))                                                  \
  ROW(kSlack, .name = "slack", .ids = {Body("/event_id")}, .type = Body("/event/type"),   \
      .timestamp = "X-Slack-Request-Timestamp",                                           \
      .answer = {"/type", "url_verification", 200, "challenge", "challenge"})             \
  ROW(kGitlab, .name = "gitlab", .keys = Keys::kToken, .key_name = "GitLab token",        \
      .token_header = "X-Gitlab-Token",                                                   \
      .ids = {Header("Idempotency-Key"), Header("X-Gitlab-Event-UUID")},                  \
      .type = Header("X-Gitlab-Event"))                                                   \
  ROW(kPaddle, .name = "paddle", .ids = {Body("/event_id")}, .type = Body("/event_type"), \
      .timestamp = "ts= of Paddle-Signature")                                             \
  ROW(kSquare, .name = "square", .needs_public_url = true, .ids = {Body("/event_id")},    \
      .id_required = true, .type = Body("/type"))                                         \
  ROW(kDiscord, .name = "discord", .keys = Keys::kEd25519Hex,                             \
      .key_name = "Discord application public key", .type = Body("/event/type"),          \
      .timestamp = "X-Signature-Timestamp", .answer = {"/type", "0", 204, "", "ping"})    \
  ROW(kTwilio, .name = "twilio", .needs_public_url = true, .type_constant = "twilio",     \
      .body = BodyFormat::kForm)                                                          \
  ROW(kHmac, .name = "hmac", .hmac_block = true)

// The endpoint's provider: one value per row, in the rows' order, then kNone (`verify: none`).
#define HOOKBOX_PROVIDER_ENUMERATOR(id, ...) id,
enum class Provider { HOOKBOX_PROVIDERS(HOOKBOX_PROVIDER_ENUMERATOR) kNone };
#undef HOOKBOX_PROVIDER_ENUMERATOR

// One row.
struct ProviderSpec {
  using Source = provider_rows::Source;
  using Keys = provider_rows::Keys;
  using BodyFormat = provider_rows::BodyFormat;

  Provider provider = Provider::kNone;
  std::string_view name{};  // `provider:` in config.yaml
  Keys keys = Keys::kSecret;
  // What messages call one of its keys, where a generic word would not do.
  std::string_view key_name = "secret";
  // Keys::kToken: the header that carries the token; the inbox never stores it.
  std::string_view token_header{};
  // It signs the URL it calls, which hookbox behind a proxy cannot know: `public_url` is
  // required.
  bool needs_public_url = false;
  // Its scheme is the endpoint's own `hmac` block (header, algorithm, encoding, prefix: an
  // HmacScheme): required with this provider and refused with the others.
  bool hmac_block = false;
  // The event id's default sources, tried in order (an `event_id:` key replaces them); none:
  // "sha256:" and the hash of the body (of the signed message, for schemes that sign one).
  std::array<Source, 2> ids{};
  // Without `event_id:`, a delivery none of `ids` names is refused (400), not hashed: the
  // producer always sends one, and the hash would make a new event of any signed bytes.
  bool id_required = false;
  // The event type's default source; else `type_constant` (the producer names no event).
  Source type{};
  std::string_view type_constant{};
  // Where the signed timestamp checked against `tolerance` is; empty: none, so a captured
  // delivery is a replay dedupe alone catches (tests/verify/providers_test.cc holds each
  // scheme to this).
  std::string_view timestamp{};
  BodyFormat body = BodyFormat::kJson;
  provider_rows::EarlyAnswer answer{};
};

namespace provider_rows {

#define HOOKBOX_PROVIDER_ROW(id, ...) ProviderSpec{.provider = Provider::id, __VA_ARGS__},
inline constexpr ProviderSpec kRows[] = {HOOKBOX_PROVIDERS(HOOKBOX_PROVIDER_ROW)};
#undef HOOKBOX_PROVIDER_ROW

// The row of `verify: none`: no keys, no defaults.
inline constexpr ProviderSpec kNoProvider{.name = "none"};

}  // namespace provider_rows

// Every row, in order (config's `provider:` choices, tests).
inline constexpr std::span<const ProviderSpec> Providers() { return provider_rows::kRows; }

// The row of `provider`; for kNone, a row with nothing in it (named "none").
constexpr const ProviderSpec& SpecOf(Provider provider) {
  const auto index = static_cast<size_t>(provider);
  return index < std::size(provider_rows::kRows) ? provider_rows::kRows[index]
                                                 : provider_rows::kNoProvider;
}

}  // namespace hookbox
