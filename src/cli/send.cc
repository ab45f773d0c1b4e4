// `hookbox send ENDPOINT FILE`: signs FILE with the endpoint's first secret that can sign
// (not a public key) exactly as its provider would and POSTs it (to this config's `listen`
// and the endpoint's path unless --url says where), for trying a config end to end. Exit 0 on a 2xx
// answer, else 1.
//
// What it sends is a credential: a signature anyone who sees it can replay within the
// provider's tolerance (or forever, for schemes without a timestamp), or GitLab's token
// itself. So it says on stderr what it sends and where, and refuses to send it over plain
// http:// to anything but a loopback address unless --insecure is given. FILE is posted
// unchanged (the signature covers it), so --id and --type can name the event only where the
// endpoint reads them from a header; where it reads them from the body, they belong in FILE.
// The answer is printed with terminal controls escaped, as the inbox verbs print stored text:
// --url may be any server.
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>

#include "base/ascii.h"
#include "cli/cli.h"
#include "http/client.h"
#include "ops/terminal.h"
#include "receive/identify.h"
#include "verify/verify.h"

namespace hookbox::cli {
namespace {

std::string BodyFieldOr(const std::string& body, const std::string& pointer) {
  return BodyField(body, pointer).value_or("");
}

// This config's own listener, loopback when it listens on every address.
std::string DefaultUrl(const Config& config, const Endpoint& ep) {
  auto listen = ParseHostPort(config.listen);
  std::string host = listen->host == "0.0.0.0" || listen->host == "::" ? "127.0.0.1" : listen->host;
  return "http://" + host + ":" + std::to_string(listen->port) + ep.path;
}

// 127.0.0.0/8, ::1 (or ::ffff:127.x.y.z) or `localhost`: a request that never leaves this
// host. Other names are not resolved: what they resolve to can change.
bool IsLoopback(const std::string& host) {
  if (EqualsIgnoringAsciiCase(host, "localhost")) return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

std::string Describe(const FieldRef& ref) {
  switch (ref.from) {
    case FieldRef::From::kHeader:
      return "header:" + ref.name;
    case FieldRef::From::kBody:
      return "body:" + ref.name;
    case FieldRef::From::kForm:
      return "form:" + ref.name;
    case FieldRef::From::kNone:
      break;
  }
  return "none";
}

// Where the endpoint reads the event's id or type, for --id / --type: the header to set,
// or, when it is not a header, why the option cannot be honoured.
struct Field {
  const char* option;  // "--id" or "--type"
  const char* what;    // "event id" or "event type"
  std::optional<FieldRef> source;
};

Field IdField(const Endpoint& ep) {
  Field f{"--id", "event id", std::nullopt};
  if (!ep.event_id.empty()) {
    f.source = ep.event_id;
  } else if (auto sources = DefaultIdSources(ep.provider); !sources.empty()) {
    f.source = sources.front();  // standard: webhook-id, the family Sign() signs
  }
  return f;
}

Field TypeField(const Endpoint& ep) {
  FieldRef source = ep.event_type.empty() ? DefaultTypeSource(ep.provider) : ep.event_type;
  Field f{"--type", "event type", std::nullopt};
  if (!source.empty()) f.source = source;
  return f;
}

// Empty when the option can be honoured (a header); else what to tell the operator.
std::string CannotSet(const Endpoint& ep, const Field& field) {
  const bool id = std::string_view(field.option) == "--id";
  const std::string start = "hookbox: " + std::string(field.option) + ": endpoint " + ep.name;
  if (!field.source) {
    if (id) {
      return start + " has no event id source: its ids are the SHA-256 of the body, so only " +
             "another FILE is another id (or set event_id: header:NAME in its config)";
    }
    if (const ProviderSpec& provider = SpecOf(ep.provider); !provider.type_constant.empty()) {
      return start + "'s event type is always \"" + std::string(provider.type_constant) +
             "\" (set event_type: " +
             (provider.body == ProviderSpec::BodyFormat::kForm
                  ? "form:NAME in its config to route on a field of the form)"
                  : "header:NAME in its config)");
    }
    return start + " has no event type source (set event_type: header:NAME in its config)";
  }
  if (field.source->from == FieldRef::From::kHeader) return "";
  return start + " reads its " + field.what + " from the body (" + Describe(*field.source) +
         "), and hookbox send posts FILE unchanged, as signed: write it into FILE";
}

// Replaces every value of header `name` with `value`.
void SetHeader(Headers& headers, const std::string& name, const std::string& value) {
  headers.erase(name);
  headers.emplace(name, value);
}

// The headers the provider would send: the event id and type some providers sign are taken
// from --id / --type, else from the body when present.
Headers SignedHeaders(const Endpoint& ep, const Secret* secret, const std::string& body,
                      std::string id, std::string type) {
  if (id.empty()) id = BodyFieldOr(body, "/id");
  if (type.empty()) type = BodyFieldOr(body, "/type");
  if (id.empty()) {
    id = "send-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  }
  if (type.empty()) type = "hookbox.test";
  Headers headers = secret == nullptr
                        ? Headers{}
                        : Sign(ep, *secret, body, std::chrono::system_clock::now(), id, type);
  headers.erase("Content-Type");
  return headers;
}

// One line on stderr: where this goes and which credential it carries.
std::string WhatIsSent(const Endpoint& ep, const Secret* signer, const std::string& file,
                       size_t bytes, const HttpUrl& url, const Headers& headers) {
  std::string names;
  for (const auto& [name, value] : headers) names += (names.empty() ? "" : ", ") + name;
  std::string line = "hookbox: sending " + TerminalSafe(file) + " (" + std::to_string(bytes) +
                     " bytes) to " + TerminalSafe(url.ToString()) + " as endpoint " + ep.name +
                     " (" + ProviderName(ep.provider) + ") would receive it";
  if (!names.empty()) line += ", with " + TerminalSafe(names);
  if (signer == nullptr) return line + "; unsigned\n";
  if (const ProviderSpec& provider = SpecOf(ep.provider); !provider.token_header.empty()) {
    return line + "; " + std::string(provider.token_header) +
           " is the endpoint's token itself (from " + signer->source +
           "): whoever sees this request can use it\n";
  }
  return line + "; signed with the secret from " + signer->source +
         ": whoever sees this request can replay it\n";
}

// "" when `value` (of --id or --type) can be sent; else what to tell the operator.
std::string CheckOption(const Endpoint& ep, const std::string& value, const Field& field) {
  if (value.empty()) return "";
  if (std::any_of(value.begin(), value.end(),
                  [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
    return "hookbox: " + std::string(field.option) + ": a control character cannot be sent\n";
  }
  std::string why = CannotSet(ep, field);
  return why.empty() ? why : why + "\n";
}

// Where to POST, or nullopt having said why not. A credential goes over plain
// http:// only to loopback, to this config's own listener (one of this host's addresses,
// which a packet to does not leave it), or with --insecure.
std::optional<HttpUrl> Destination(const Config& config, const Endpoint& ep, const SendArgs& args,
                                   bool credential) {
  const bool own_listener = args.url.empty();
  auto url = ParseHttpUrl(own_listener ? DefaultUrl(config, ep) : args.url);
  if (!url.ok()) {
    std::cerr << "hookbox: " << (own_listener ? "the config's listen address" : "--url") << ": "
              << url.status().ToString() << "\n";
    return std::nullopt;
  }
  if (credential && !url->https && !own_listener && !IsLoopback(url->host) && !args.insecure) {
    const ProviderSpec& provider = SpecOf(ep.provider);
    const bool token = provider.keys == ProviderSpec::Keys::kToken;
    std::cerr << "hookbox: refusing to send endpoint " << ep.name << "'s "
              << (token ? provider.key_name : "signature") << " in clear text to "
              << TerminalSafe(url->host)
              << ", which is not a loopback address: anyone on the way could "
              << (token ? "use it" : "replay the delivery")
              << " (use https://, or --insecure to send it anyway)\n";
    return std::nullopt;
  }
  return *url;
}

}  // namespace

int Send(const std::string& path, const SendArgs& args) {
  std::optional<Config> config = LoadOrReport(path, /*resolve_secrets=*/true);
  if (!config) return kExitUsage;
  const Endpoint* ep = config->FindByName(args.endpoint);
  if (!ep) {
    (void)KnownEndpoint(*config, args.endpoint);  // prints the error
    return kExitUsage;
  }
  const Field id_field = IdField(*ep), type_field = TypeField(*ep);
  if (std::string why =
          CheckOption(*ep, args.id, id_field) + CheckOption(*ep, args.type, type_field);
      !why.empty()) {
    std::cerr << why;
    return kExitUsage;
  }
  std::ifstream in(args.file, std::ios::binary);
  if (!in) {
    std::cerr << "hookbox: cannot read " << args.file << "\n";
    return kExitUsage;
  }
  std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Secret* signer = nullptr;
  for (const Secret& secret : ep->secrets) {
    if (signer == nullptr && CanSign(secret)) signer = &secret;
  }
  if (signer == nullptr && !ep->secrets.empty()) {
    std::cerr << "hookbox: endpoint " << ep->name << " verifies with public keys only: only "
              << "the producer holds the private key that signs, so hookbox send cannot sign "
              << "for it (add a whsec_ secret to a standard endpoint to try it, or use the "
              << "producer's own test delivery)\n";
    return kExitUsage;
  }
  std::optional<HttpUrl> url = Destination(*config, *ep, args, signer != nullptr);
  if (!url) return kExitUsage;
  Headers headers = SignedHeaders(*ep, signer, body, args.id, args.type);
  if (!args.id.empty()) SetHeader(headers, id_field.source->name, args.id);
  if (!args.type.empty()) SetHeader(headers, type_field.source->name, args.type);
  std::cerr << WhatIsSent(*ep, signer, args.file, body.size(), *url, headers);
  auto reply = HttpPost(*url, headers, body,
                        // A form-body producer (twilio) posts forms, and signs their fields.
                        SpecOf(ep->provider).body == ProviderSpec::BodyFormat::kForm
                            ? "application/x-www-form-urlencoded"
                            : "application/json",
                        std::chrono::seconds(30));
  if (!reply.ok()) {
    std::cerr << "hookbox: " << TerminalSafe(reply.status().ToString()) << "\n";
    return kExitUsage;
  }
  // Whatever server --url names wrote this: escaped, as `inbox show` prints stored bodies.
  std::cout << reply->status << " " << TerminalSafeText(reply->body) << "\n";
  return reply->status >= 200 && reply->status < 300 ? kExitOk : kExitUsage;
}

}  // namespace hookbox::cli
