// A warning for a config file that others on the host can read while it holds secrets
// written inline (`value:`): anyone with a shell could then forge deliveries. `env:` and
// `file:` secrets do not count (the file holds only their names). hookbox still starts;
// `check-config` prints the warning and `serve` logs it (README.md, Security notes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace hookbox {

// Where `config` holds inline secrets, one entry each: "endpoint stripe secret 1",
// "endpoint demo handler relay sign.secret".
std::vector<std::string> InlineSecretPlaces(const Config& config);

struct ExposedSecrets {
  std::string path;                 // the config file
  unsigned mode = 0;                // its permission bits, e.g. 0644
  std::string owner;                // its owner's name (or uid when it has none)
  std::vector<std::string> places;  // InlineSecretPlaces

  std::string ModeText() const;  // "0644"
  // One line naming the file, its mode and owner, where the secrets are, and the fix.
  std::string Message() const;
};

// What to do about it, in words that fit both installs: the package's config is 0640
// root:hookbox, a from-source install's service runs as a dynamic user (README, "Install").
inline constexpr char kExposureFix[] =
    "chmod 600 the file (or 640 with the service's group as its group: hookbox for the Debian "
    "package), or move the secrets to file: or env: sources, or to systemd credentials "
    "(LoadCredential=)";

// Set when `config.path` is readable by others (mode & 04), or by a group other than the
// service's (mode & 040; the service's: this process's effective group, or `hookbox`), and
// the config holds at least one inline secret; nullopt otherwise (also when the file cannot
// be stat'ed, e.g. a config loaded from text).
std::optional<ExposedSecrets> CheckInlineSecretsExposure(const Config& config);

}  // namespace hookbox
