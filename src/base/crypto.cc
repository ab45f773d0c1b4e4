// General-purpose cryptographic building blocks (the providers of src/verify/ are built on
// them): HMAC, SHA-256 and Ed25519 verification from OpenSSL (EVP), strict hex and base64 codecs,
// and the constant-time comparison. The codecs reject anything a producer would not send
// (odd-length hex, stray whitespace, bad padding, non-canonical base64), so a signature has exactly
// one accepted spelling.
#include "base/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <memory>
#include <utility>

#include "base/ascii.h"

namespace hookbox {
namespace {

// OpenSSL 3 finds an algorithm's implementation by name (a "fetch") each time it is handed
// a name or one of the legacy EVP_sha256()-style handles: for a 2 KB delivery the fetches
// cost about a third as much as the hashing itself (bench/RESULTS.md, instructions per
// accept). So each algorithm is fetched once for the process, and each thread keeps one
// context per algorithm and hash kind, re-initialised for every use.
const char* DigestName(HashAlgorithm algorithm) {
  switch (algorithm) {
    case HashAlgorithm::kSha1:
      return "SHA1";
    case HashAlgorithm::kSha256:
      return "SHA256";
    case HashAlgorithm::kSha512:
      return "SHA512";
  }
  return "SHA256";
}

constexpr size_t kAlgorithms = 3;

const EVP_MD* Digest(HashAlgorithm algorithm) {
  // Fetched once, kept for the process's life (never freed: threads may hash until exit).
  static const std::array<EVP_MD*, kAlgorithms> kFetched = {
      EVP_MD_fetch(nullptr, DigestName(HashAlgorithm::kSha1), nullptr),
      EVP_MD_fetch(nullptr, DigestName(HashAlgorithm::kSha256), nullptr),
      EVP_MD_fetch(nullptr, DigestName(HashAlgorithm::kSha512), nullptr)};
  if (const EVP_MD* md = kFetched[static_cast<size_t>(algorithm)]) return md;
  // Not fetched (a provider configuration without it): OpenSSL's legacy handle, which fetches
  // at each use, and fails there as it would have.
  switch (algorithm) {
    case HashAlgorithm::kSha1:
      return EVP_sha1();
    case HashAlgorithm::kSha512:
      return EVP_sha512();
    default:
      return EVP_sha256();
  }
}

struct FreeMdCtx {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct FreeMacCtx {
  void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
};

// This thread's HMAC context for `algorithm`, its digest set; null if OpenSSL has no HMAC.
EVP_MAC_CTX* HmacContext(HashAlgorithm algorithm) {
  static EVP_MAC* const kHmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  thread_local std::array<std::unique_ptr<EVP_MAC_CTX, FreeMacCtx>, kAlgorithms> contexts;
  auto& ctx = contexts[static_cast<size_t>(algorithm)];
  if (!ctx && kHmac != nullptr) {
    ctx.reset(EVP_MAC_CTX_new(kHmac));
    std::array<OSSL_PARAM, 2> params = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                         const_cast<char*>(DigestName(algorithm)), 0),
        OSSL_PARAM_construct_end()};
    if (ctx && EVP_MAC_CTX_set_params(ctx.get(), params.data()) != 1) ctx.reset();
  }
  return ctx.get();
}

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

}  // namespace

std::optional<HashAlgorithm> ParseHashAlgorithm(std::string_view name) {
  if (name == "sha1") return HashAlgorithm::kSha1;
  if (name == "sha256") return HashAlgorithm::kSha256;
  if (name == "sha512") return HashAlgorithm::kSha512;
  return std::nullopt;
}

size_t DigestSize(HashAlgorithm algorithm) {
  return static_cast<size_t>(EVP_MD_get_size(Digest(algorithm)));
}

std::string Hmac(HashAlgorithm algorithm, std::string_view key, std::string_view message) {
  // OpenSSL wants a non-null key pointer even for an empty key.
  static const unsigned char kEmpty = 0;
  const auto* key_data = key.empty() ? &kEmpty : reinterpret_cast<const unsigned char*>(key.data());
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t mac_len = 0;
  EVP_MAC_CTX* ctx = HmacContext(algorithm);
  // The key is given anew each time: init with a key starts a fresh MAC under it.
  if (ctx == nullptr || EVP_MAC_init(ctx, key_data, key.size(), nullptr) != 1 ||
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(message.data()), message.size()) !=
          1 ||
      EVP_MAC_final(ctx, mac, &mac_len, sizeof mac) != 1) {
    return {};  // cannot happen with these digests; an empty MAC never compares equal
  }
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

std::string Sha256(std::string_view data) {
  thread_local std::unique_ptr<EVP_MD_CTX, FreeMdCtx> ctx(EVP_MD_CTX_new());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), Digest(HashAlgorithm::kSha256), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &digest_len) != 1) {
    return {};
  }
  return std::string(reinterpret_cast<const char*>(digest), digest_len);
}

std::string Sha256Hex(std::string_view data) { return HexEncode(Sha256(data)); }

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0x0f]);
  }
  return out;
}

std::optional<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = HexDigitValue(hex[i]);
    int lo = HexDigitValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  // EVP_DecodeBlock skips surrounding whitespace, accepts '=' anywhere it likes and counts
  // padding as zero bytes, so the input is checked here first: whole quanta of the standard
  // alphabet, with at most two '=' and only at the very end.
  if (text.size() % 4 != 0) return std::nullopt;
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  for (size_t i = 0; i < text.size() - padding; ++i) {
    if (!IsBase64Char(text[i])) return std::nullopt;
  }
  if (text.empty()) return std::string();
  std::string out(3 * text.size() / 4, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0 || static_cast<size_t>(n) != out.size()) return std::nullopt;
  out.resize(out.size() - padding);
  // Unused bits under the padding must be zero ("QR==" is not another spelling of "QQ==").
  if (Base64Encode(out) != text) return std::nullopt;
  return out;
}

std::optional<std::string> Base64DecodeOptionalPadding(std::string_view text) {
  if (text.size() % 4 == 0 || text.find('=') != std::string_view::npos) return Base64Decode(text);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string padded(text);
  padded.append(4 - text.size() % 4, '=');
  return Base64Decode(padded);
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

struct Ed25519PublicKey::Key {
  EVP_PKEY* pkey = nullptr;
  ~Key() { EVP_PKEY_free(pkey); }
};

Ed25519PublicKey::Ed25519PublicKey(std::unique_ptr<Key> key) : key_(std::move(key)) {}
Ed25519PublicKey::~Ed25519PublicKey() = default;

std::shared_ptr<const Ed25519PublicKey> Ed25519PublicKey::FromRaw(std::string_view raw) {
  if (raw.size() != kKeySize) return nullptr;
  auto key = std::make_unique<Key>();
  key->pkey = EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
  if (key->pkey == nullptr) {
    ERR_clear_error();
    return nullptr;
  }
  return std::shared_ptr<const Ed25519PublicKey>(new Ed25519PublicKey(std::move(key)));
}

bool Ed25519PublicKey::Verifies(std::string_view message, std::string_view signature) const {
  if (signature.size() != kSignatureSize) return false;
  // A context per call: the key is shared by threads, a context is not.
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return false;
  // Ed25519 is one-shot: no digest is named, and EVP_DigestVerify takes the whole message.
  bool ok = EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, key_->pkey) == 1 &&
            EVP_DigestVerify(
                ctx, reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) ERR_clear_error();  // a refused signature is an answer, not an error to keep
  return ok;
}

}  // namespace hookbox
