// `hookbox check-config` and `hookbox migrate`: every problem of a config file (handlers'
// settings included) without starting anything, and creating or updating the inbox schema
// it names.
#include <iostream>

#include "cli/cli.h"
#include "config/exposure.h"
#include "handlers/handler.h"

namespace hookbox::cli {

// `read_secrets` false: secrets are checked for shape only, for a shell that lacks the
// service's environment and credentials (/run/credentials/... exists only inside it).
int CheckConfig(const std::string& path, bool read_secrets) {
  LoadResult r = LoadConfigFile(path, {.resolve_secrets = read_secrets});
  if (r.config) (void)BuildHandlers(*r.config, &r.errors);  // each kind checks its config
  if (!r.errors.empty()) r.config.reset();
  if (r.config) {
    if (auto exposed = CheckInlineSecretsExposure(*r.config)) {
      std::cerr << "hookbox: warning: " << exposed->Message() << "\n";
    }
  }
  for (const std::string& w : r.warnings) std::cout << path << ": warning: " << w << "\n";
  for (const std::string& e : r.errors) std::cout << path << ": error: " << e << "\n";
  if (!r.config) {
    std::cout << r.errors.size() << " error(s)\n";
    return kExitUsage;
  }
  std::cout << path << ": ok (" << r.config->endpoints.size() << " endpoint(s))\n";
  return kExitOk;
}

int Migrate(const std::string& path) {
  std::vector<std::string> applied;
  Opened opened = LoadAndOpen(path, {.create = true, .applied = &applied});
  if (!opened.inbox) return opened.exit_code;
  for (const std::string& m : applied) std::cout << "applied " << m << "\n";
  if (applied.empty()) std::cout << "schema is up to date\n";
  return kExitOk;
}

}  // namespace hookbox::cli
