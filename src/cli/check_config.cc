// `hookbox check-config` and `hookbox migrate`: every problem of a config file (handlers'
// settings included, each at its line and column with the rest) without starting anything,
// and creating or updating the inbox schema it names.
#include <iostream>

#include "cli/cli.h"
#include "config/exposure.h"
#include "handlers/handler.h"
#include "ops/terminal.h"
#include "work/held.h"

namespace hookbox::cli {

namespace {

// A config that renames or removes a handler leaves its waiting jobs held (work/held.h): say
// how many, before a reload or restart does it. The inbox is opened as the read verbs open
// it; if it cannot be (not created yet, not reachable from this shell), there is nothing to
// say and the check does not fail for it.
void PrintHeldWarnings(const std::string& path, const Config& config) {
  auto inbox = OpenInbox({.database = config.database, .create = false});
  if (!inbox.ok()) return;
  auto backlog = (*inbox)->UnfinishedByHandler();
  if (!backlog.ok()) return;
  for (const HandlerBacklog& b : Unconfigured(*backlog, config)) {
    std::cout << path << ": warning: " << TerminalSafe(HeldWarning(b)) << "\n";
  }
}

}  // namespace

// `read_secrets` false: secrets are checked for shape only, for a shell that lacks the
// service's environment and credentials (/run/credentials/... exists only inside it).
int CheckConfig(const std::string& path, bool read_secrets) {
  // The kinds' settings are read with the rest, and checked on this host as serve would.
  LoadResult r = LoadConfig(path, read_secrets, /*host_checks=*/true);
  // What only building the handlers can meet (none of today's kinds has any).
  if (r.config) (void)BuildHandlers(*r.config, &r.errors);
  if (!r.errors.empty()) r.config.reset();
  if (r.config) {
    if (auto exposed = CheckInlineSecretsExposure(*r.config)) {
      std::cerr << "hookbox: warning: " << exposed->Message() << "\n";
    }
  }
  for (const std::string& w : r.warnings) std::cout << Diagnostic(path, "warning", w) << "\n";
  for (const std::string& e : r.errors) std::cout << Diagnostic(path, "error", e) << "\n";
  if (!r.config) {
    std::cout << r.errors.size() << " error(s)\n";
    return kExitUsage;
  }
  PrintHeldWarnings(path, *r.config);
  const size_t alerts = r.config->alerts.size();
  const size_t endpoints = r.config->endpoints.size() - (alerts ? 1 : 0);  // kAlertsEndpoint
  std::cout << path << ": ok (" << endpoints << " endpoint(s)";
  if (alerts) std::cout << ", " << alerts << " alert(s)";
  std::cout << ")\n";
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
