// Shared by the verify tests: endpoints, clocks, a way to read a failure's reason, and the
// producer's side of Ed25519 (hookbox only verifies; tests must sign).
#pragma once

#include <openssl/evp.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "config/secrets.h"
#include "verify/verify.h"

namespace hookbox::testing {

inline TimePoint At(int64_t unix_seconds) { return TimePoint(std::chrono::seconds(unix_seconds)); }

inline Endpoint MakeEndpoint(Provider provider, std::vector<std::string> secrets) {
  Endpoint endpoint;
  endpoint.name = "test-endpoint";
  endpoint.path = "/hooks/test";
  endpoint.provider = provider;
  for (std::string& value : secrets) {
    // As the config loader does: a public key is parsed once, here.
    auto key = config_internal::PublicKeyOf(provider, value);
    endpoint.secrets.emplace_back("value", std::move(value), std::move(key));
  }
  return endpoint;
}

// "ok", or the failure's what() (one of the reason:: strings).
inline std::string Outcome(const Status& status) {
  if (status.ok()) return "ok";
  if (status.code() != Status::Code::kUnauthenticated) return "wrong code: " + status.ToString();
  return status.what();
}

// A copy of `headers` with `name` set to `value` (all earlier values of it removed).
inline Headers With(Headers headers, const std::string& name, const std::string& value) {
  headers.erase(name);
  headers.emplace(name, value);
  return headers;
}

inline Headers Without(Headers headers, const std::string& name) {
  headers.erase(name);
  return headers;
}

inline std::string First(const Headers& headers, const std::string& name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

// RFC 8032's first test key: its 32-byte private seed and its public key.
inline const std::string kEd25519Seed =
    *HexDecode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
inline const std::string kEd25519Public =
    *HexDecode("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");

// The Ed25519 signature (64 raw bytes) of `message` by the key with private seed `seed`.
inline std::string Ed25519Sign(std::string_view seed, std::string_view message) {
  EVP_PKEY* key = EVP_PKEY_new_raw_private_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(seed.data()), seed.size());
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::string signature(64, '\0');
  size_t size = signature.size();
  const bool ok =
      key != nullptr && ctx != nullptr &&
      EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, key) == 1 &&
      EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(signature.data()), &size,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  return ok && size == 64 ? signature : std::string();
}

// The public key of a private seed (32 raw bytes).
inline std::string Ed25519PublicOf(std::string_view seed) {
  EVP_PKEY* key = EVP_PKEY_new_raw_private_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(seed.data()), seed.size());
  std::string raw(32, '\0');
  size_t size = raw.size();
  const bool ok =
      key != nullptr &&
      EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &size) == 1;
  EVP_PKEY_free(key);
  return ok && size == 32 ? raw : std::string();
}

}  // namespace hookbox::testing
