// `hookbox purge` and `hookbox stats`: what retention would delete (and deleting it now, as
// the daily purge does), and how many rows each endpoint has in each status. Text for a
// terminal, every field escaped; `--json` for scripts.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <tuple>

#include "cli/cli.h"
#include "ops/clock.h"
#include "ops/terminal.h"
#include "work/held.h"
#include "work/purge.h"

namespace hookbox::cli {
namespace {

using nlohmann::json;

// One line of the purge's report: a kind of row, how many went, and the cutoff it had.
using PurgeLine = std::tuple<const char*, int64_t, TimePoint>;

void PrintPurge(const std::vector<PurgeLine>& kinds, const PurgeRequest& request, bool dry_run,
                bool as_json) {
  if (as_json) {
    json out = {{"dry_run", dry_run}};
    for (const auto& [kind, n, before] : kinds) out[kind] = n;
    out["processed_before"] = FormatTime(request.processed_before);
    out["dead_before"] = FormatTime(request.dead_before);
    out["sequences_before"] = FormatTime(request.sequences_before);
    std::cout << Dump(out, 2) << "\n";
    return;
  }
  std::printf("%s\n", dry_run ? "would purge (dry run, nothing deleted):" : "purged:");
  for (const auto& [kind, n, before] : kinds) {
    std::printf("  %-10s %8lld  (before %s)\n", kind, static_cast<long long>(n),
                FormatTime(before).c_str());
  }
}

}  // namespace

int Stats(const std::string& path, bool as_json) {
  Opened opened = LoadAndOpen(path, {});
  if (!opened.inbox) return opened.exit_code;
  auto stats = opened.inbox->Stats();
  if (!stats.ok()) return ReportFailure(stats.status());
  auto backlog = opened.inbox->UnfinishedByHandler();
  if (!backlog.ok()) return ReportFailure(backlog.status());
  const std::vector<HandlerBacklog> held = Unconfigured(*backlog, *opened.config);
  if (as_json) {
    // Jobs held for want of their handler go to stderr: the JSON's shape, counts of rows by
    // endpoint and status, stays as scripts know it.
    for (const HandlerBacklog& b : held) {
      std::cerr << "hookbox: warning: " << TerminalSafe(HeldWarning(b)) << "\n";
    }
    json out = json::object();
    for (const auto& [endpoint, by_status] : *stats) out[endpoint] = by_status;
    std::cout << Dump(out, 2) << "\n";
    return kExitOk;
  }
  std::printf("%-16s %-10s %s\n", "ENDPOINT", "STATUS", "COUNT");
  for (const auto& [endpoint, by_status] : *stats) {
    for (const auto& [status, count] : by_status) {
      std::printf("%-16s %-10s %lld\n", TerminalSafe(endpoint).c_str(),
                  TerminalSafe(status).c_str(), static_cast<long long>(count));
    }
  }
  // In text, the held jobs are said once: a table, and one line of what to do about them.
  if (!held.empty()) {
    std::printf("\nheld: unfinished jobs whose handler is not configured\n");
    std::printf("%-16s %-32s %s\n", "ENDPOINT", "HANDLER", "JOBS");
    for (const HandlerBacklog& h : held) {
      std::printf("%-16s %-32s %lld\n", TerminalSafe(h.endpoint).c_str(),
                  TerminalSafe(h.handler).c_str(), static_cast<long long>(h.unfinished));
    }
    std::printf(
        "configure each again, or: hookbox inbox reassign ENDPOINT HANDLER NEW | "
        "hookbox inbox drop ENDPOINT HANDLER\n");
  }
  return kExitOk;
}

// Deletes (or, with --dry-run, counts) what retention no longer keeps, as the daily purge
// does, and prints how many rows of each kind.
int Purge(const std::string& path, bool dry_run, bool as_json) {
  Opened opened = LoadAndOpen(path, {});
  if (!opened.inbox) return opened.exit_code;
  const PurgeRequest request =
      PurgeCutoffs(opened.config->retention, std::chrono::system_clock::now(), dry_run);
  auto counts = opened.inbox->Purge(request);
  if (!counts.ok()) return ReportFailure(counts.status());
  PrintPurge({{"processed", counts->processed, request.processed_before},
              {"stale", counts->stale, request.processed_before},
              {"ignored", counts->ignored, request.processed_before},
              {"dead", counts->dead, request.dead_before},
              {"sequences", counts->sequences, request.sequences_before}},
             request, dry_run, as_json);
  return kExitOk;
}

}  // namespace hookbox::cli
