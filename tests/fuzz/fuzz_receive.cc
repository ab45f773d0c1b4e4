// libFuzzer harness: the whole receive path in-process, request -> verdict, against a real
// SQLite inbox in a temp directory: routing, verification, identification, the accept
// transaction and the answer. One endpoint per provider (and one unverified), so one input
// can reach every provider's checks; and the input may ask the harness to sign its body as
// that endpoint's producer would (hookbox::Sign, or Ed25519 with the harness's own key for
// discord and standard v1a), so mutated bodies get past verification into identify (ids,
// types, resource and sequence pointers, form fields) and the accept transaction.
// Every answer must be one of the documented statuses with a JSON body (204: none), and a
// delivery signed as its producer signs it, with nothing added, must never be refused 401.
//
// Input layout (FuzzedDataProvider; tests/fuzz/make_receive_seeds.py writes seeds in it):
// from the end, one byte each: method, endpoint, header count, each header's name, signing
// mode; from the front, each a string ended by "\" and another byte: [path when the endpoint
// byte picks "any path"], query, each header's value, event id, event type; the rest is the
// body.
//
// The receiver logs one line per delivery to stderr; the harness asks libFuzzer to close
// stderr for the code under test (-close_fd_mask=2, added in LLVMFuzzerInitialize: libFuzzer
// keeps its own output and sanitizer reports on a copy), else 10^7 runs write gigabytes.
// HOOKBOX_FUZZ_LOGS=1 keeps the logs.
#include <fuzzer/FuzzedDataProvider.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/crypto.h"
#include "base/form.h"
#include "inbox/inbox.h"
#include "receive/receiver.h"
#include "verify/sign.h"

using namespace hookbox;

namespace {

// RFC 8032's first test key pair (section 7.1, TEST 1): the private half signs here, the
// public half is in the config (hex for discord, whpk_ base64 for standard).
constexpr unsigned char kEd25519Private[32] = {
    0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
    0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60};

constexpr char kConfig[] = R"(
database: unused
endpoints:
  - name: stripe
    path: /hooks/stripe
    provider: stripe
    secrets: [{value: whsec_stripe_fuzz}]
    resource: body:/data/object/id
    sequence: body:/created
    strict_body: true
    routes: [{events: ["invoice.*", "charge.*"], handlers: [{name: h, file: {dir: /nonexistent-not-used}}]}]
  - name: github
    path: /hooks/github
    provider: github
    secrets: [{value: github-fuzz-secret}]
    dedupe: [id, body]
    resource: body:/repository/full_name
    sequence: body:/repository/pushed_at
    routes: [{events: ["push", "pull_request"], handlers: [{name: h, file: {dir: /nonexistent-not-used}}]}]
  - name: standard
    path: /hooks/standard
    provider: standard
    secrets: [{value: "whsec_c2VjcmV0LWZvci1mdXp6"}, {value: "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="}]
    resource: body:/data/id
    sequence: body:/timestamp
    routes: [{events: ["*"], handlers: [{name: h, file: {dir: /nonexistent-not-used}}]}]
  - {name: shopify, path: /hooks/shopify, provider: shopify, secrets: [{value: shopify-fuzz}]}
  - {name: slack, path: /hooks/slack, provider: slack, secrets: [{value: slack-fuzz}]}
  - name: slack-commands
    path: /hooks/slack-commands
    provider: slack
    secrets: [{value: slack-fuzz}]
    event_id: form:trigger_id
    event_type: form:command
    routes: [{events: ["/deploy"], handlers: [{name: h, file: {dir: /nonexistent-not-used}}]}]
  - {name: gitlab, path: /hooks/gitlab, provider: gitlab, secrets: [{value: gitlab-fuzz-token}]}
  - name: paddle
    path: /hooks/paddle
    provider: paddle
    secrets: [{value: pdl_ntfset_fuzz}]
    resource: body:/data/id
    sequence: body:/occurred_at
  - name: square
    path: /hooks/square
    provider: square
    public_url: "https://example.com/hooks/square"
    secrets: [{value: square-fuzz-key}]
    dedupe: [id, body]
  - name: discord
    path: /hooks/discord
    provider: discord
    secrets: [{value: d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a}]
  - name: twilio
    path: /hooks/twilio
    provider: twilio
    public_url: "https://example.com/hooks/twilio"
    secrets: [{value: twilio-fuzz-token}]
    event_type: form:MessageStatus
    resource: form:MessageSid
    sequence: form:SequenceNumber
    routes: [{events: ["delivered"], handlers: [{name: h, file: {dir: /nonexistent-not-used}}]}]
  - name: hmac
    path: /hooks/hmac
    provider: hmac
    secrets: [{value: hmac-fuzz}]
    hmac: {header: X-Signature, algorithm: sha512, encoding: base64, prefix: "sha512="}
    event_id: header:X-Event-Id
    event_type: header:X-Event-Type
  - name: open
    path: /hooks/open
    verify: none
    event_id: body:/id
    resource: body:/obj
    sequence: body:/seq
    strict_body: true
    routes: [{events: ["*"], handlers: [{name: h, file: {dir: /nonexistent-not-used}}]}]
)";

// In the config's order; the input's endpoint byte picks one, or (one past the end) a path
// read from the input.
constexpr std::array<const char*, 13> kPaths = {
    "/hooks/stripe",         "/hooks/github", "/hooks/standard", "/hooks/shopify", "/hooks/slack",
    "/hooks/slack-commands", "/hooks/gitlab", "/hooks/paddle",   "/hooks/square",  "/hooks/discord",
    "/hooks/twilio",         "/hooks/hmac",   "/hooks/open"};

// Every header a provider reads (signature, timestamp, id, type), and a few others.
constexpr std::array<const char*, 34> kHeaderNames = {"Stripe-Signature",
                                                      "X-Hub-Signature-256",
                                                      "X-Hub-Signature",
                                                      "X-GitHub-Delivery",
                                                      "X-GitHub-Event",
                                                      "webhook-id",
                                                      "webhook-timestamp",
                                                      "webhook-signature",
                                                      "svix-id",
                                                      "svix-timestamp",
                                                      "svix-signature",
                                                      "X-Shopify-Hmac-Sha256",
                                                      "X-Shopify-Event-Id",
                                                      "X-Shopify-Webhook-Id",
                                                      "X-Shopify-Topic",
                                                      "X-Slack-Signature",
                                                      "X-Slack-Request-Timestamp",
                                                      "X-Gitlab-Token",
                                                      "X-Gitlab-Event",
                                                      "X-Gitlab-Event-UUID",
                                                      "Idempotency-Key",
                                                      "Paddle-Signature",
                                                      "x-square-hmacsha256-signature",
                                                      "X-Signature-Ed25519",
                                                      "X-Signature-Timestamp",
                                                      "X-Twilio-Signature",
                                                      "X-Twilio-Webhooks-Signature-Settings",
                                                      "I-Twilio-Idempotency-Token",
                                                      "X-Signature",
                                                      "X-Event-Id",
                                                      "X-Event-Type",
                                                      "Content-Type",
                                                      "Authorization",
                                                      "Cookie"};

// How the harness signs (the input's signing byte, modulo 4). kVariant is each provider's
// other way, where it has one: standard v1a (Ed25519), twilio's JSON requests (bodySHA256 in
// the query, the URL alone signed); kOtherVariant: standard under svix-* names, twilio with
// HMAC-SHA256 (X-Twilio-Webhooks-Signature-Settings). Elsewhere both are kSign.
enum SignMode { kUnsigned = 0, kSign = 1, kVariant = 2, kOtherVariant = 3 };

struct World {
  World() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-fuzz-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    LoadResult r = LoadConfigText(kConfig, "fuzz.yaml", {.resolve_secrets = true});
    for (const std::string& error : r.errors)
      std::fprintf(stderr, "fuzz.yaml: %s\n", error.c_str());
    if (!r.config) __builtin_trap();
    config = std::make_shared<const Config>(std::move(*r.config));
    auto opened = OpenInbox({dir + "/inbox.db", /*durable=*/false, true});
    if (!opened.ok()) __builtin_trap();
    inbox = std::move(*opened);
    receiver = std::make_unique<Receiver>(
        ReceiverSetup{config, std::make_shared<const HandlerSet>()}, *inbox, clock);
    ed25519 = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, kEd25519Private,
                                           sizeof(kEd25519Private));
    if (!ed25519) __builtin_trap();
  }
  ~World() {
    EVP_PKEY_free(ed25519);
    receiver.reset();
    inbox.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string dir;
  std::shared_ptr<const Config> config;
  std::unique_ptr<Inbox> inbox;
  SystemClock clock;
  std::unique_ptr<Receiver> receiver;
  EVP_PKEY* ed25519 = nullptr;
};

std::string Ed25519Sign(EVP_PKEY* key, const std::string& message) {
  unsigned char sig[64];
  size_t len = sizeof(sig);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok =
      ctx && EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, key) == 1 &&
      EVP_DigestSign(ctx, sig, &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) __builtin_trap();
  return std::string(reinterpret_cast<const char*>(sig), len);
}

// Twilio's form fields as it signs them after the URL (src/verify/twilio.cc).
std::string SortedFields(const std::string& body) {
  FormFields fields = ParseUrlEncoded(body);
  std::sort(fields.begin(), fields.end());
  fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
  std::string text;
  for (const auto& [name, value] : fields) text += name + value;
  return text;
}

std::string WithQuery(const std::string& url, const std::string& query) {
  return query.empty() ? url : url + "?" + query;
}

// The headers `ep`'s producer sends with `body` (and, for twilio's JSON variant, the query it
// calls); empty when the endpoint has nothing the harness can sign with.
Headers ProducerHeaders(const World& world, const Endpoint& ep, SignMode mode,
                        const std::string& body, std::string& query, std::string event_id,
                        const std::string& event_type) {
  const TimePoint now = world.clock.Now();
  const std::string ts = std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count());
  Headers headers;
  if (ep.secrets.empty()) return headers;
  switch (ep.provider) {
    case Provider::kDiscord:
      headers.emplace("X-Signature-Ed25519", HexEncode(Ed25519Sign(world.ed25519, ts + body)));
      headers.emplace("X-Signature-Timestamp", ts);
      return headers;
    case Provider::kStandard: {
      if (event_id.empty()) event_id = "msg_fuzz";  // Sign would draw a random one
      if (mode == kVariant) {
        headers.emplace("webhook-id", event_id);
        headers.emplace("webhook-timestamp", ts);
        headers.emplace(
            "webhook-signature",
            "v1a," + Base64Encode(Ed25519Sign(world.ed25519, event_id + "." + ts + "." + body)));
        return headers;
      }
      Headers signed_headers = Sign(ep, ep.secrets[0], body, now, event_id, event_type);
      if (mode != kOtherVariant) return signed_headers;
      for (const auto& [name, value] : signed_headers) {
        headers.emplace("svix-" + name.substr(std::string("webhook-").size()), value);
      }
      return headers;
    }
    case Provider::kTwilio: {
      const std::string& token = ep.secrets[0].value;
      if (mode == kVariant) {
        query += (query.empty() ? "" : "&") + std::string("bodySHA256=") + Sha256Hex(body);
        headers.emplace("X-Twilio-Signature", Base64Encode(Hmac(HashAlgorithm::kSha1, token,
                                                                WithQuery(ep.public_url, query))));
        return headers;
      }
      if (mode == kOtherVariant) {
        headers.emplace("X-Twilio-Signature",
                        Base64Encode(Hmac(HashAlgorithm::kSha256, token,
                                          WithQuery(ep.public_url, query) + SortedFields(body))));
        headers.emplace("X-Twilio-Webhooks-Signature-Settings", "algorithm=HMAC_SHA256");
        return headers;
      }
      [[fallthrough]];
    }
    case Provider::kSquare: {
      // Both sign the URL called, query included; Sign signs public_url as it is.
      Endpoint called = ep;
      called.public_url = WithQuery(ep.public_url, query);
      return Sign(called, ep.secrets[0], body, now, event_id, event_type);
    }
    default:
      return Sign(ep, ep.secrets[0], body, now, event_id, event_type);
  }
}

bool DocumentedStatus(int status) {
  switch (status) {
    case 200:  // accepted, ignored, duplicate, stale, Slack's challenge
    case 204:  // Discord's PING
    case 400:
    case 401:
    case 404:
    case 405:
    case 413:
    case 422:
    case 503:
      return true;
    default:
      return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const char* keep = std::getenv("HOOKBOX_FUZZ_LOGS");
  if (keep && std::string(keep) == "1") return 0;
  static std::vector<char*> args;
  static char close_stderr[] = "-close_fd_mask=2";
  args.assign(*argv, *argv + *argc);
  args.push_back(close_stderr);
  args.push_back(nullptr);
  *argv = args.data();
  *argc += 1;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world_instance;  // one inbox for the whole run, as in the daemon
  World* world = &world_instance;
  FuzzedDataProvider in(data, size);
  Delivery d;
  d.method = in.PickValueInArray({"POST", "GET", "PUT"});
  const size_t which = in.ConsumeIntegralInRange<size_t>(0, kPaths.size());
  d.path = which < kPaths.size() ? std::string(kPaths[which]) : in.ConsumeRandomLengthString(32);
  d.query = in.ConsumeRandomLengthString(64);
  d.remote = "127.0.0.1:1";
  const int count = in.ConsumeIntegralInRange(0, 6);
  for (int i = 0; i < count; ++i) {
    const char* name = in.PickValueInArray(kHeaderNames);
    d.headers.emplace(name, in.ConsumeRandomLengthString(80));
  }
  const auto mode = static_cast<SignMode>(in.ConsumeIntegral<uint8_t>() % 4);
  const std::string event_id = in.ConsumeRandomLengthString(40);
  const std::string event_type = in.ConsumeRandomLengthString(40);
  d.body = in.ConsumeRemainingBytesAsString();

  const Endpoint* ep = world->config->FindByPath(d.path);
  bool signed_as_producer = false;
  if (mode != kUnsigned && ep) {
    const bool query_names_hash = FormValue(ParseUrlEncoded(d.query), "bodySHA256").has_value();
    Headers produced = ProducerHeaders(*world, *ep, mode, d.body, d.query, event_id, event_type);
    // The producer's headers replace any of the same name the input carries.
    for (const auto& [name, value] : produced) d.headers.erase(name);
    d.headers.insert(produced.begin(), produced.end());
    // Only what the producer sent: anything added could rightly spoil it (a second
    // signature-settings header, a query naming bodySHA256, svix-* beside webhook-*).
    signed_as_producer =
        !produced.empty() && count == 0 && (ep->provider != Provider::kTwilio || !query_names_hash);
  }

  Answer a = world->receiver->Receive(d);
  if (!DocumentedStatus(a.status)) __builtin_trap();
  if (a.status == 204 ? !a.body.empty() : (a.body.empty() || a.body.front() != '{')) {
    __builtin_trap();
  }
  if (signed_as_producer && a.status == 401) __builtin_trap();
  return 0;
}
