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

// Set when `config.path` is readable by its group or by others (mode & 044) and the config
// holds at least one inline secret; nullopt otherwise (also when the file cannot be
// stat'ed, e.g. a config loaded from text).
std::optional<ExposedSecrets> CheckInlineSecretsExposure(const Config& config);

}  // namespace hookbox
