// Secret resolution for the config loader: environment variables, files (systemd
// credentials under /run/credentials/...) and inline test values, read once at load so a
// missing or empty secret stops the daemon before it listens ("an empty secret refuses to
// start"). Nothing here ever puts secret bytes into a message.

#include "config/secrets.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/crypto.h"

namespace hookbox::config_internal {
namespace {

// A secret file larger than this is almost certainly the wrong file.
constexpr size_t kMaxSecretFile = 64 * 1024;

constexpr std::string_view kEmpty = " (an empty secret refuses to start)";

// Spaces, tabs and line ends only: a secret no producer signs with, almost always a
// variable or file filled in by mistake (docs/SECURITY.md row 12).
bool OnlyWhitespace(std::string_view text) {
  return text.find_first_not_of(" \t\r\n\v\f") == std::string_view::npos;
}

}  // namespace

StatusOr<std::string> ReadFile(const std::string& path, size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::InvalidArgument(std::strerror(errno));
  std::string content;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return Status::InvalidArgument(std::strerror(err));
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > limit) {
      ::close(fd);
      return Status::InvalidArgument("larger than " + std::to_string(limit) + " bytes");
    }
  }
  ::close(fd);
  return content;
}

StatusOr<Secret> ResolveSecret(SecretSource source, const std::string& arg) {
  switch (source) {
    case SecretSource::kEnv: {
      if (arg.empty()) return Status::InvalidArgument("env: needs a variable name");
      const char* value = std::getenv(arg.c_str());
      if (value == nullptr) {
        return Status::InvalidArgument("environment variable " + arg + " is not set");
      }
      if (*value == '\0') {
        return Status::InvalidArgument("environment variable " + arg + " is empty" +
                                       std::string(kEmpty));
      }
      if (OnlyWhitespace(value)) {
        return Status::InvalidArgument("environment variable " + arg + " is only whitespace" +
                                       std::string(kEmpty));
      }
      return Secret{"env:" + arg, value};
    }
    case SecretSource::kFile: {
      if (arg.empty()) return Status::InvalidArgument("file: needs a path");
      auto content = ReadFile(arg, kMaxSecretFile);
      if (!content.ok()) {
        return Status::InvalidArgument("cannot read file " + arg + ": " + content.status().what());
      }
      // Editors and `echo` add one newline; strip exactly one.
      if (content->ends_with("\r\n")) {
        content->resize(content->size() - 2);
      } else if (content->ends_with('\n')) {
        content->pop_back();
      }
      if (content->empty()) {
        return Status::InvalidArgument("file " + arg + " is empty" + std::string(kEmpty));
      }
      if (OnlyWhitespace(*content)) {
        return Status::InvalidArgument("file " + arg + " is only whitespace" + std::string(kEmpty));
      }
      return Secret{"file:" + arg, std::move(*content)};
    }
    case SecretSource::kValue:
      if (arg.empty()) return Status::InvalidArgument("value is empty" + std::string(kEmpty));
      if (OnlyWhitespace(arg)) {
        return Status::InvalidArgument("value is only whitespace" + std::string(kEmpty));
      }
      return Secret{"value", arg};
  }
  return Status::Internal("unknown secret source");
}

bool IsStandardWebhooksSecret(std::string_view secret) {
  // Exactly what verification decodes (KeyOf in src/verify/standard.cc;
  // tests/verify/standard_test.cc checks the two agree), so that a secret that loads always
  // verifies: base64 of at least one byte, padding complete or absent.
  if (!secret.starts_with("whsec_")) return false;
  secret.remove_prefix(6);
  const std::optional<std::string> key = Base64DecodeOptionalPadding(secret);
  return key && !key->empty();
}

std::shared_ptr<const Ed25519PublicKey> PublicKeyOf(Provider provider, std::string_view value) {
  using Keys = ProviderSpec::Keys;
  std::optional<std::string> raw;
  const Keys keys = SpecOf(provider).keys;
  if (keys == Keys::kStandard && value.starts_with("whpk_")) {
    raw = Base64DecodeOptionalPadding(value.substr(5));
  } else if (keys == Keys::kEd25519Hex && value.size() == 2 * Ed25519PublicKey::kKeySize) {
    raw = HexDecode(value);
  }
  if (!raw) return nullptr;
  return Ed25519PublicKey::FromRaw(*raw);  // nullptr unless 32 bytes
}

std::string CheckKey(Provider provider, Secret& secret) {
  using Keys = ProviderSpec::Keys;
  const ProviderSpec& spec = SpecOf(provider);
  const bool standard = spec.keys == Keys::kStandard;
  if (spec.keys == Keys::kEd25519Hex || (standard && secret.value.starts_with("whpk_"))) {
    secret.public_key = PublicKeyOf(provider, secret.value);
    if (secret.public_key) return "";
    return standard ? " is not a Standard Webhooks public key (whpk_ followed by the base64 of "
                      "32 bytes)"
                    : " is not a " + std::string(spec.key_name) + " (64 hex digits)";
  }
  if (standard && !secret.value.starts_with("whsec_")) {
    // Without its prefix a public key would load as an HMAC key, and anyone holding the
    // public key could sign v1 with it: the kind of key must be said (docs/SECURITY.md
    // row 120).
    return " has no prefix: add whsec_ if it is the signing secret, or whpk_ if it is the "
           "public key (a Standard Webhooks key starts with one of them)";
  }
  if (standard && !IsStandardWebhooksSecret(secret.value)) {
    return " is not a Standard Webhooks key (whsec_ followed by base64)";
  }
  return "";
}

}  // namespace hookbox::config_internal
