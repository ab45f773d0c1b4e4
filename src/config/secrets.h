// Resolving the secrets an endpoint names (`env:`, `file:`, `value:`) into bytes, once, at
// load. Internal to src/config: the rest of hookbox only sees the resolved Secret. Every
// message names the source (env NAME, file PATH) and never the secret itself.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "config/config.h"

namespace hookbox::config_internal {

enum class SecretSource { kEnv, kFile, kValue };

// The whole content of the file at `path`, failing (message: the reason, e.g. "No such file
// or directory") when it cannot be read or is larger than `limit` bytes. Also reads
// config.yaml itself.
StatusOr<std::string> ReadFile(const std::string& path, size_t limit);

// Reads the secret: an environment variable (must be set and non-empty), a file (readable,
// one trailing "\n" or "\r\n" stripped, then non-empty) or the inline text (non-empty). A
// secret of whitespace only is refused like an empty one.
// `arg` is the variable name, the path or the inline text.
StatusOr<Secret> ResolveSecret(SecretSource source, const std::string& arg);

// True when `secret` is a Standard Webhooks key: "whsec_" then non-empty standard
// base64 (padding optional; the unused bits of the last character zero), i.e. exactly the
// secrets verification can decode into a key.
bool IsStandardWebhooksSecret(std::string_view secret);

// The Ed25519 public key a secret entry holds for the providers whose keys are public keys
// (config/providers.h, ProviderSpec::keys): Keys::kStandard `whpk_` + base64 of the 32-byte
// key (padding optional), Keys::kEd25519Hex the key's 64 hex digits (discord: the
// application's "public key" in Discord's portal). nullptr when `value` is not such a key (or
// the provider takes none).
std::shared_ptr<const Ed25519PublicKey> PublicKeyOf(Provider provider, std::string_view value);

// Checks a resolved secret entry against the kind of key the provider's row takes, and parses
// a public key into `secret.public_key`. "" when it will verify; else what is wrong, as the
// end of a sentence about it (" is not a Standard Webhooks key (...)"), naming no secret byte.
std::string CheckKey(Provider provider, Secret& secret);

}  // namespace hookbox::config_internal
