// `hookbox alerts test NAME`: sends the named alert's target one sample alert (work/alerts.h,
// condition `test`), now, from this shell, and says what the target answered. Nothing is
// stored. The alert's secrets are read (its http target signs with one), so the operator runs
// it where the service's credentials are (e.g. `sudo -u hookbox`), as check-config does.
#include <iostream>

#include "cli/cli.h"
#include "handlers/handler.h"
#include "ops/terminal.h"
#include "work/alerts.h"

namespace hookbox::cli {

int AlertsTest(const std::string& path, const std::string& name) {
  std::optional<Config> config = LoadOrReport(path, /*resolve_secrets=*/true, /*host_checks=*/true);
  if (!config) return kExitUsage;
  const Alert* alert = nullptr;
  for (const Alert& a : config->alerts) {
    if (a.name == name) alert = &a;
  }
  if (alert == nullptr) {
    std::cerr << "hookbox: no alert named \"" << TerminalSafe(name) << "\" in " << config->path;
    if (!config->alerts.empty()) {
      std::cerr << " (its alerts:";
      for (const Alert& a : config->alerts) std::cerr << " " << TerminalSafe(a.name);
      std::cerr << ")";
    }
    std::cerr << "\n";
    return kExitUsage;
  }
  std::vector<std::string> errors;
  const HandlerSet handlers = BuildHandlers(*config, &errors);
  for (const std::string& e : errors) std::cerr << Diagnostic(path, "error", e) << "\n";
  Handler* target = handlers.Find(std::string(kAlertsEndpoint), alert->name);
  if (!errors.empty() || target == nullptr) return kExitUsage;
  const HandlerEvent sample = SampleAlert(*alert, std::chrono::system_clock::now());
  const HandlerResult result = target->Run(sample);
  const std::string detail = TerminalSafe(result.detail.substr(0, 512));
  if (result.outcome == Outcome::kOk) {
    std::cout << "alert " << TerminalSafe(alert->name) << ": sent " << sample.event_id
              << (detail.empty() ? "" : " (" + detail + ")") << "\n";
    return kExitOk;
  }
  std::cout << "alert " << TerminalSafe(alert->name)
            << ": not sent: " << OutcomeName(result.outcome)
            << (detail.empty() ? "" : ": " + detail) << "\n";
  return kExitUsage;
}

}  // namespace hookbox::cli
