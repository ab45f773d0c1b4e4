// libFuzzer harness: the whole receive path in-process, request -> verdict, against a real
// SQLite inbox in a temp directory: routing, verification, identification, the accept
// transaction and the answer. The config is built from the provider table
// (config/providers.h), so one input can reach every provider's checks and a new row is
// fuzzed without an edit here (no provider is named in this file): per row, an endpoint with
// the row's defaults and one with every identity field set (a form row's from form fields,
// a JSON row's from a header and the body), with rotation and dedupe on the body; and one
// unverified endpoint. The input may ask the harness to sign its body as that endpoint's
// producer would (hookbox::Sign, with the URL called for rows that sign it), so mutated
// bodies get past verification into identify (ids, types, resource and sequence pointers,
// form fields) and the accept transaction. The receiver's clock is fixed, so seeds may also
// carry signatures made beforehand: those of the keys Sign() cannot sign with (public keys)
// and of a scheme's other spellings (tests/fuzz/make_receive_seeds.py).
// Every answer must be one of the documented statuses with a JSON body (204: none), and a
// delivery signed as its producer signs it, with nothing added, must never be refused 401.
//
// Input layout (FuzzedDataProvider; tests/fuzz/make_receive_seeds.py writes seeds in it):
// from the end, one byte each: method, "path from the input" (odd) then, if even, the
// endpoint's index in the config, header count, per header "name from the input" (odd) then,
// if even, the name's index, and the signing mode; from the front, each a string ended by
// "\" and another byte: [the path], query, per header [its name] and its value, event id,
// event type; the rest is the body.
//
// The receiver logs one line per delivery to stderr; the harness asks libFuzzer to close
// stderr for the code under test (-close_fd_mask=2, added in LLVMFuzzerInitialize: libFuzzer
// keeps its own output and sanitizer reports on a copy), else 10^7 runs write gigabytes.
// HOOKBOX_FUZZ_LOGS=1 keeps the logs.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/crypto.h"
#include "base/form.h"
#include "fuzz_providers.h"
#include "inbox/inbox.h"
#include "receive/receiver.h"
#include "verify/verify.h"

using namespace hookbox;

namespace {

// 2025-12-02T21:00:00Z, the time of the seeds' own signatures.
constexpr TimePoint kNow{std::chrono::seconds(1'764'709'200)};

class FixedClock final : public Clock {
 public:
  TimePoint Now() const override { return kNow; }
};

// Two routes: globs that some types match, and one every type does.
constexpr char kRoutes[] =
    "    routes:\n"
    "      - {events: [\"*.*\", \"push\"], handlers: [{name: h, file: {dir: "
    "/nonexistent-not-used}}]}\n"
    "      - {events: [\"*\"], handlers: [{name: all, file: {dir: /nonexistent-not-used}}]}\n";

// The entries of a row's `secrets`, by the kind of key it takes: two shared secrets (the
// second as after a rotation), as whsec_ keys where the row takes those, and a whpk_ public
// key beside them; or a public key alone.
std::vector<std::string> SecretsOf(const ProviderSpec& row) {
  const std::string name(row.name);
  switch (row.keys) {
    case fuzz::Keys::kEd25519Hex:
      return {std::string(fuzz::kEd25519Hex)};
    case fuzz::Keys::kStandard:
      return {"whsec_" + Base64Encode(name + "-fuzz-secret"),
              "whsec_" + Base64Encode(name + "-fuzz-rotated"), std::string(fuzz::kEd25519Whpk)};
    default:
      return {name + "-fuzz-secret", name + "-fuzz-rotated"};
  }
}

// One endpoint of `row`: its defaults, or (`fields`) every identity field set from where
// the row's producer posts it.
std::string EndpointText(const ProviderSpec& row, bool fields) {
  const std::string name(row.name);
  const std::string path = "/hooks/" + name + (fields ? "/fields" : "");
  std::string text = "  - name: " + name + (fields ? "-fields" : "") + "\n    path: " + path +
                     "\n    provider: " + name + "\n    secrets: [";
  const char* comma = "";
  for (const std::string& secret : SecretsOf(row)) {
    text += std::string(comma) + "{value: \"" + secret + "\"}";
    comma = ", ";
  }
  text += "]\n";
  if (row.needs_public_url) text += "    public_url: \"https://example.com" + path + "\"\n";
  if (row.hmac_block) {
    text += "    hmac: {header: " + std::string(fuzz::kHmacHeader) +
            ", algorithm: sha512, encoding: base64, prefix: \"sha512=\"}\n";
  }
  if (!fields) return text;
  if (row.body == fuzz::BodyFormat::kForm) {
    text +=
        "    event_id: form:id\n    event_type: form:type\n"
        "    resource: form:resource\n    sequence: form:sequence\n";
  } else {
    text +=
        "    event_id: header:X-Event-Id\n    event_type: header:X-Event-Type\n"
        "    resource: body:/data/id\n    sequence: body:/sequence\n";
  }
  return text + "    dedupe: [id, body]\n    strict_body: true\n" + kRoutes;
}

std::string ConfigText() {
  std::string text = "database: unused\nendpoints:\n";
  for (const ProviderSpec& row : Providers()) {
    text += EndpointText(row, false);
    text += EndpointText(row, true);
  }
  return text +
         "  - name: open\n    path: /hooks/open\n    verify: none\n    event_id: body:/id\n"
         "    resource: body:/obj\n    sequence: body:/seq\n    strict_body: true\n" +
         kRoutes;
}

std::string WithQuery(const std::string& url, const std::string& query) {
  return query.empty() ? url : url + "?" + query;
}

// What the harness needs to sign as an endpoint's producer.
struct Producer {
  Endpoint signer;                     // a copy of the endpoint; public_url set per request
  std::vector<const Secret*> secrets;  // the endpoint's entries Sign() signs with
  bool invents_ids = false;            // Sign() draws an id when given none
};

// How the harness signs (the input's signing byte, modulo 3).
enum SignMode { kUnsigned = 0, kFirstSecret = 1, kLastSecret = 2 };

struct World {
  World() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-fuzz-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    LoadResult r = LoadConfigText(ConfigText(), "fuzz.yaml", {.resolve_secrets = true});
    for (const std::string& error : r.errors)
      std::fprintf(stderr, "fuzz.yaml: %s\n", error.c_str());
    if (!r.config) __builtin_trap();
    config = std::make_shared<const Config>(std::move(*r.config));
    auto opened = OpenInbox({dir + "/inbox.db", /*durable=*/false, true});
    if (!opened.ok()) __builtin_trap();
    inbox = std::move(*opened);
    receiver = std::make_unique<Receiver>(
        ReceiverSetup{config, std::make_shared<const HandlerSet>()}, *inbox, *inbox, clock);
    for (const Endpoint& ep : config->endpoints) {
      Producer& producer = producers.emplace_back();
      producer.signer = ep;
      for (const Secret& secret : ep.secrets) {
        if (CanSign(secret)) producer.secrets.push_back(&secret);
      }
      const Secret* first = producer.secrets.empty() ? nullptr : producer.secrets.front();
      fuzz::AddHeaderNames(header_names, ep, first);
      // Sign() is a pure function of its arguments but for the ids a scheme invents: the
      // harness gives those rows an id, so that an input replays alike.
      if (first != nullptr) {
        producer.invents_ids =
            Sign(ep, *first, "{}", kNow, "", "") != Sign(ep, *first, "{}", kNow, "", "");
      }
    }
    for (std::string_view name : fuzz::kGenericHeaders) fuzz::AddName(header_names, name);
  }
  ~World() {
    receiver.reset();
    inbox.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string dir;
  std::shared_ptr<const Config> config;
  std::unique_ptr<Inbox> inbox;
  FixedClock clock;
  std::unique_ptr<Receiver> receiver;
  std::vector<Producer> producers;  // config->endpoints' order
  std::vector<std::string> header_names;
};

// The headers `ep`'s producer sends with `body` to `query`; empty when the endpoint has
// nothing the harness can sign with.
Headers ProducerHeaders(Producer& producer, const Endpoint& ep, SignMode mode,
                        const std::string& body, const std::string& query, std::string event_id,
                        const std::string& event_type) {
  if (mode == kUnsigned || producer.secrets.empty()) return {};
  const Secret& secret =
      mode == kFirstSecret ? *producer.secrets.front() : *producer.secrets.back();
  // The rows that sign the URL sign the one called, query included; Sign() signs
  // public_url as it is.
  if (SpecOf(ep.provider).needs_public_url) {
    producer.signer.public_url = WithQuery(ep.public_url, query);
  }
  if (event_id.empty() && producer.invents_ids) event_id = "evt_fuzz";
  return Sign(producer.signer, secret, body, kNow, event_id, event_type);
}

// True when `query` makes the endpoint's scheme sign a form body by a hash in the query
// rather than by its fields, so that what Sign() signs (the fields) is not what is checked.
// Verifier::TooManyFormFields says so without naming the scheme: it leaves such a body
// unbounded.
bool QuerySignsBodyByHash(const Endpoint& ep, const std::string& query) {
  static const std::string kManyFields = [] {
    std::string fields;
    for (size_t i = 0; i <= kMaxFormFields; ++i) fields += "a=1&";
    return fields;
  }();
  return SpecOf(ep.provider).body == fuzz::BodyFormat::kForm &&
         !Verifier(ep).TooManyFormFields(kManyFields, query);
}

bool DocumentedStatus(int status) {
  switch (status) {
    case 200:  // accepted, ignored, duplicate, stale, a row's early answer
    case 204:  // a row's early answer without a body
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
  const std::vector<Endpoint>& endpoints = world->config->endpoints;
  if (in.ConsumeBool()) {
    d.path = in.ConsumeRandomLengthString(48);
  } else {
    d.path = endpoints[in.ConsumeIntegralInRange<size_t>(0, endpoints.size() - 1)].path;
  }
  d.query = in.ConsumeRandomLengthString(128);
  d.remote = "127.0.0.1:1";
  const int count = in.ConsumeIntegralInRange(0, 6);
  for (int i = 0; i < count; ++i) {
    std::string name = fuzz::PickHeaderName(in, world->header_names);
    d.headers.emplace(std::move(name), in.ConsumeRandomLengthString(192));
  }
  const auto mode = static_cast<SignMode>(in.ConsumeIntegral<uint8_t>() % 3);
  const std::string event_id = in.ConsumeRandomLengthString(40);
  const std::string event_type = in.ConsumeRandomLengthString(40);
  d.body = in.ConsumeRemainingBytesAsString();

  const Endpoint* ep = world->config->FindByPath(d.path);
  bool signed_as_producer = false;
  if (ep != nullptr) {
    Producer& producer = world->producers[ep - endpoints.data()];
    Headers produced = ProducerHeaders(producer, *ep, mode, d.body, d.query, event_id, event_type);
    // The producer's headers replace any of the same name the input carries.
    for (const auto& [name, value] : produced) d.headers.erase(name);
    d.headers.insert(produced.begin(), produced.end());
    // Only what the producer sent: anything added could rightly spoil it (a second
    // signature header of another spelling, a query that changes what is signed).
    signed_as_producer = !produced.empty() && count == 0 && !QuerySignsBodyByHash(*ep, d.query);
  }

  Answer a = world->receiver->Receive(d);
  if (!DocumentedStatus(a.status)) __builtin_trap();
  if (a.status == 204 ? !a.body.empty() : (a.body.empty() || a.body.front() != '{')) {
    __builtin_trap();
  }
  if (signed_as_producer && a.status == 401) __builtin_trap();
  return 0;
}
