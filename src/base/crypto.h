// General-purpose cryptographic pieces, all on OpenSSL: HMAC, SHA-256, Ed25519 signature
// checks, hex and base64, and a constant-time comparison. Nothing here knows a provider:
// verification (src/verify/) builds every scheme on them, identification hashes bodies with them,
// the `file` handler names files with them. In base/ so that any layer may use them without
// depending on verify/. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace hookbox {

enum class HashAlgorithm { kSha1, kSha256, kSha512 };

// "sha1" | "sha256" | "sha512" (the generic hmac provider's `algorithm`); nullopt otherwise.
std::optional<HashAlgorithm> ParseHashAlgorithm(std::string_view name);
// Bytes in a digest (and so in an HMAC) of `algorithm`: 20, 32, 64.
size_t DigestSize(HashAlgorithm algorithm);

// Raw MAC bytes of HMAC(key, message).
std::string Hmac(HashAlgorithm algorithm, std::string_view key, std::string_view message);
// Raw SHA-256 digest, and its lowercase hex form.
std::string Sha256(std::string_view data);
std::string Sha256Hex(std::string_view data);

std::string HexEncode(std::string_view bytes);                   // lowercase
std::optional<std::string> HexDecode(std::string_view hex);      // either case; nullopt if bad
std::string Base64Encode(std::string_view bytes);                // standard alphabet, padded
std::optional<std::string> Base64Decode(std::string_view text);  // nullopt if bad
// Base64Decode, also taking the same text without its trailing '=' padding ("Zg" as "Zg==").
// Partial padding ("Zg=") and non-zero bits under the missing padding are still refused.
std::optional<std::string> Base64DecodeOptionalPadding(std::string_view text);

// True when a and b are byte-for-byte equal. Length is checked first (lengths of MACs are
// public); the bytes are compared with CRYPTO_memcmp so timing does not leak where they differ.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

// An Ed25519 public key (RFC 8032), parsed once (config load) and shared read-only by every
// request thread afterwards.
class Ed25519PublicKey {
 public:
  static constexpr size_t kKeySize = 32, kSignatureSize = 64;
  // The key whose raw encoding is `raw` (32 bytes); nullptr when OpenSSL refuses it.
  static std::shared_ptr<const Ed25519PublicKey> FromRaw(std::string_view raw);
  ~Ed25519PublicKey();
  Ed25519PublicKey(const Ed25519PublicKey&) = delete;
  Ed25519PublicKey& operator=(const Ed25519PublicKey&) = delete;

  // True when `signature` (64 raw bytes) is this key's signature of `message`. A signature
  // of any other length is false. Public data only: no secret for its timing to leak.
  bool Verifies(std::string_view message, std::string_view signature) const;

 private:
  struct Key;  // holds the EVP_PKEY, so that this header does not include OpenSSL's
  explicit Ed25519PublicKey(std::unique_ptr<Key> key);
  std::unique_ptr<Key> key_;
};

}  // namespace hookbox
