// `hookbox inbox reassign` and `hookbox inbox drop`: what an operator does with the jobs of a
// handler the config no longer has (renamed, or removed; DESIGN.md, Handler names). Such
// jobs are held, never run by another handler nor made dead for it; these verbs give them
// to a configured handler (with the old one's pause, if it was paused), or delete them so
// their rows can settle.
#include <chrono>
#include <iostream>

#include "cli/cli.h"
#include "ops/terminal.h"
#include "work/held.h"

namespace hookbox::cli {
namespace {

// Only the jobs of a handler the config lacks: moving or dropping a configured handler's
// jobs would take work from under a running daemon.
bool RefuseConfigured(const Config& config, const std::string& endpoint,
                      const std::string& handler) {
  if (!IsConfigured(config, endpoint, handler)) return false;
  std::cerr << "hookbox: handler " << TerminalSafe(handler) << " is configured for endpoint "
            << TerminalSafe(endpoint)
            << "; reassign and drop take only the jobs of handlers the config no longer has\n";
  return true;
}

// The old handler's pause goes to the new one before any job moves, so the moved jobs do
// not run against the downstream the pause was for (README, "Renaming a handler"); then the
// old name's state row goes, so `handler list` and hookbox_handler_paused forget it.
// Returns kExitOk, or the exit code of a failure it reported.
int CarryPause(Inbox& inbox, const std::string& endpoint, const std::string& from,
               const std::string& to, TimePoint now) {
  auto all = inbox.Handlers(now, /*count_jobs=*/false);
  if (!all.ok()) return ReportFailure(all.status());
  const HandlerState* old_state = nullptr;
  for (const HandlerStatus& h : *all) {
    if (h.state.endpoint == endpoint && h.state.handler == from) old_state = &h.state;
  }
  if (old_state == nullptr) return kExitOk;
  if (old_state->paused) {
    auto paused = inbox.SetPaused({{endpoint, to}}, true, old_state->paused_reason, now);
    if (!paused.ok()) return ReportFailure(paused.status());
    std::cout << (*paused > 0 ? "paused " : "already paused: ") << TerminalSafe(endpoint + "/" + to)
              << ", as " << TerminalSafe(from) << " was"
              << (old_state->paused_reason.empty()
                      ? ""
                      : " (" + TerminalSafe(old_state->paused_reason) + ")")
              << "; hookbox handler resume " << TerminalSafe(endpoint + "/" + to)
              << " when its downstream is ready\n";
  }
  auto forgot = inbox.ForgetHandler({endpoint, from});
  if (!forgot.ok()) return ReportFailure(forgot.status());
  return kExitOk;
}

}  // namespace

int InboxReassign(const std::string& path, const std::string& endpoint, const std::string& from,
                  const std::string& to) {
  Opened opened = LoadAndOpen(path, {.endpoint = endpoint, .check = [&](Config& c) {
                                       if (RefuseConfigured(c, endpoint, from)) return false;
                                       if (IsConfigured(c, endpoint, to)) return true;
                                       std::cerr << "hookbox: endpoint " << TerminalSafe(endpoint)
                                                 << " has no handler named " << TerminalSafe(to)
                                                 << "\n";
                                       return false;
                                     }});
  if (!opened.inbox) return opened.exit_code;
  if (int code = CarryPause(*opened.inbox, endpoint, from, to, std::chrono::system_clock::now());
      code != kExitOk) {
    return code;
  }
  auto counts = opened.inbox->Reassign(endpoint, from, to, std::chrono::system_clock::now());
  if (!counts.ok()) return ReportFailure(counts.status());
  std::cout << "moved " << counts->moved << " job(s) of " << TerminalSafe(endpoint) << " from "
            << TerminalSafe(from) << " to " << TerminalSafe(to);
  if (counts->kept > 0) {
    std::cout << "; " << counts->kept << " left with " << TerminalSafe(from)
              << " (their row has a job of " << TerminalSafe(to)
              << " already, or they are running: run this again once they are held)";
  }
  std::cout << "\n";
  return kExitOk;
}

int InboxDrop(const std::string& path, const std::string& endpoint, const std::string& handler) {
  Opened opened = LoadAndOpen(path, {.endpoint = endpoint, .check = [&](Config& c) {
                                       return !RefuseConfigured(c, endpoint, handler);
                                     }});
  if (!opened.inbox) return opened.exit_code;
  auto dropped = opened.inbox->DropJobs(endpoint, handler, std::chrono::system_clock::now());
  if (!dropped.ok()) return ReportFailure(dropped.status());
  std::cout << "dropped " << *dropped << " job(s) of handler " << TerminalSafe(handler) << " from "
            << TerminalSafe(endpoint) << "\n";
  return kExitOk;
}

}  // namespace hookbox::cli
