// `hookbox send ENDPOINT FILE`: signs FILE with the endpoint's first secret that can sign
// (not a public key) exactly as its provider would and POSTs it (to this config's `listen`
// and the endpoint's path unless --url says where), for trying a config end to end. Exit 0 on a 2xx
// answer, else 1.
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>

#include "cli/cli.h"
#include "http/client.h"
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

// The headers the provider would send: the event id and type some providers sign are taken
// from the body when present.
Headers SignedHeaders(const Endpoint& ep, const Secret* secret, const std::string& body) {
  std::string id = BodyFieldOr(body, "/id"), type = BodyFieldOr(body, "/type");
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

}  // namespace

int Send(const std::string& path, const std::string& endpoint_name, const std::string& file,
         std::string url_text) {
  std::optional<Config> config = LoadOrReport(path, /*resolve_secrets=*/true);
  if (!config) return kExitUsage;
  const Endpoint* ep = config->FindByName(endpoint_name);
  if (!ep) {
    (void)KnownEndpoint(*config, endpoint_name);  // prints the error
    return kExitUsage;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "hookbox: cannot read " << file << "\n";
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
  if (url_text.empty()) url_text = DefaultUrl(*config, *ep);
  auto url = ParseHttpUrl(url_text);
  if (!url.ok()) {
    std::cerr << "hookbox: --url: " << url.status().ToString() << "\n";
    return kExitUsage;
  }
  auto reply = HttpPost(
      *url, SignedHeaders(*ep, signer, body), body,
      // Twilio posts forms, and signs their fields (a JSON body is signed apart).
      ep->provider == Provider::kTwilio ? "application/x-www-form-urlencoded" : "application/json",
      std::chrono::seconds(30));
  if (!reply.ok()) {
    std::cerr << "hookbox: " << reply.status().ToString() << "\n";
    return kExitUsage;
  }
  std::cout << reply->status << " " << reply->body << "\n";
  return reply->status >= 200 && reply->status < 300 ? kExitOk : kExitUsage;
}

}  // namespace hookbox::cli
