// `hookbox handler list | pause | resume | forget`: the operator's view of each handler's
// state (paused, circuit, rate, concurrency) with its job counts, the pause that holds a
// handler's jobs while its downstream is down (DESIGN.md, "Handler state"), and forgetting
// the state of a handler the config no longer has (a rename's old name). The state is in
// the inbox database, so a pause from a shell holds on every replica from its next claim.
#include "handlers/handler.h"

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "cli/cli.h"
#include "ops/terminal.h"
#include "work/held.h"

namespace hookbox::cli {
namespace {

using nlohmann::json;

const HandlerSpec* SpecOf(const Config& config, const std::string& endpoint,
                          const std::string& handler) {
  const Endpoint* ep = config.FindByName(endpoint);
  if (!ep) return nullptr;
  for (const Route& route : ep->routes) {
    for (const HandlerSpec& spec : route.handlers) {
      if (spec.name == handler) return &spec;
    }
  }
  return nullptr;
}

std::string StateWord(const HandlerState& st, bool configured) {
  return configured ? HandlerStateName(st) : "not-configured";
}

// The handlers a pause or resume names: ENDPOINT/HANDLER or a bare HANDLER (ResolveHandler,
// against the config: only a configured handler is paused), or every handler of --endpoint.
// Sync endpoints are refused (README, "Pausing a handler"). Empty, having said why, when the
// request cannot be done.
std::vector<HandlerRef> Targets(const Config& config, const std::string& target,
                                const std::string& endpoint) {
  if (target.empty() == endpoint.empty()) {
    std::cerr << "hookbox: name one ENDPOINT/HANDLER, or --endpoint E for all its handlers\n";
    return {};
  }
  std::optional<HandlerRef> named;
  if (!target.empty()) {
    auto ref = ResolveHandler(config, nullptr, target, "");
    if (!ref.ok()) {
      ReportFailure(ref.status());
      return {};
    }
    named = *ref;
  }
  const std::string& ep_name = named ? named->endpoint : endpoint;
  const Endpoint* ep = config.FindByName(ep_name);
  if (!ep) {
    std::cerr << "hookbox: no endpoint named " << TerminalSafe(ep_name) << " in the config\n";
    return {};
  }
  if (ep->mode == Mode::kSync) {
    std::cerr << "hookbox: endpoint " << TerminalSafe(ep_name)
              << " is mode: sync: its handlers run in the producer's request, so there is "
                 "nothing to pause; make the producer stop, or switch the endpoint to async\n";
    return {};
  }
  if (named) return {*named};
  std::vector<HandlerRef> refs;
  for (const HandlerRef& h : ConfiguredHandlers(config)) {
    if (h.endpoint == ep_name) refs.push_back(h);
  }
  if (refs.empty()) {
    std::cerr << "hookbox: endpoint " << TerminalSafe(ep_name)
              << " has no handler (hookbox handler list shows the names)\n";
  }
  return refs;
}

// One row of `handler list`: a configured handler, or one the config lacks that still has
// jobs or state (its jobs are held).
struct Line {
  HandlerStatus status;
  bool configured = false;
  std::string rate, circuit;
  int concurrency = 0;
};

std::vector<Line> CollectLines(const Config& config, std::vector<HandlerStatus> all) {
  std::map<std::pair<std::string, std::string>, HandlerStatus> by;
  for (HandlerStatus& h : all) by[{h.state.endpoint, h.state.handler}] = std::move(h);
  // Concurrency is each kind's setting, read with the config (the handler built from it says).
  std::vector<std::string> build_errors;
  const HandlerSet built = BuildHandlers(config, &build_errors);

  std::vector<Line> lines;
  for (const HandlerRef& ref : ConfiguredHandlers(config)) {
    Line line;
    auto found = by.find({ref.endpoint, ref.handler});
    if (found != by.end()) {
      line.status = found->second;
      by.erase(found);
    }
    line.status.state.endpoint = ref.endpoint;
    line.status.state.handler = ref.handler;
    line.configured = true;
    if (const HandlerSpec* spec = SpecOf(config, ref.endpoint, ref.handler)) {
      line.rate = spec->rate_text;
      if (spec->circuit_failures > 0) {
        line.circuit = std::to_string(spec->circuit_failures) + " failures, cooldown " +
                       FormatDuration(spec->circuit_cooldown);
      }
    }
    if (Handler* h = built.Find(ref.endpoint, ref.handler)) line.concurrency = h->concurrency();
    lines.push_back(std::move(line));
  }
  // Handlers the config lacks that still have jobs or state: their jobs are held.
  for (auto& [key, status] : by) {
    if (status.pending + status.due + status.running + status.dead == 0 && !status.state.paused) {
      continue;
    }
    lines.push_back(Line{std::move(status), false, "", "", 0});
  }

  return lines;
}

// `handler forget`, and `handler resume` of a handler the config no longer has: its state
// row deleted, so `handler list` and hookbox_handler_paused forget it (the gauge is read
// from the rows at each scrape). Its jobs stay held, for `inbox reassign` or `inbox drop`.
int ForgetUnconfigured(Opened& opened, const std::string& target) {
  auto ref = ResolveHandler(*opened.config, opened.inbox.get(), target, "");
  if (!ref.ok()) return ReportFailure(ref.status());
  const std::string name = TerminalSafe(ref->endpoint + "/" + ref->handler);
  if (IsConfigured(*opened.config, ref->endpoint, ref->handler)) {
    std::cerr << "hookbox: handler " << name
              << " is configured: forget takes only a handler the config no longer has "
                 "(pause or resume this one)\n";
    return kExitUsage;
  }
  auto forgot = opened.inbox->ForgetHandler(*ref);
  if (!forgot.ok()) return ReportFailure(forgot.status());
  std::cout << (*forgot ? "forgot the state of " : "no state kept for ") << name
            << " (not in the config); its jobs, if any, stay held: hookbox inbox reassign or "
               "drop them\n";
  return kExitOk;
}

}  // namespace

int HandlerForget(const std::string& path, const std::string& target) {
  Opened opened = LoadAndOpen(path, {});
  if (!opened.inbox) return opened.exit_code;
  return ForgetUnconfigured(opened, target);
}

int HandlerList(const std::string& path, bool as_json) {
  Opened opened = LoadAndOpen(path, {});
  if (!opened.inbox) return opened.exit_code;
  const Config& config = *opened.config;
  auto all = opened.inbox->Handlers(std::chrono::system_clock::now(), /*count_jobs=*/true);
  if (!all.ok()) return ReportFailure(all.status());
  const std::vector<Line> lines = CollectLines(config, std::move(*all));

  if (as_json) {
    json out = json::array();
    for (const Line& l : lines) {
      const HandlerState& st = l.status.state;
      out.push_back({{"endpoint", st.endpoint},
                     {"handler", st.handler},
                     {"state", StateWord(st, l.configured)},
                     {"paused", st.paused},
                     {"reason", st.paused_reason},
                     {"paused_at", st.paused_at},
                     {"circuit", CircuitName(st.circuit)},
                     {"failures", st.failures},
                     {"open_until", st.open_until},
                     {"pending", l.status.pending},
                     {"due", l.status.due},
                     {"running", l.status.running},
                     {"dead", l.status.dead},
                     {"rate", l.rate},
                     {"circuit_limit", l.circuit},
                     {"concurrency", l.concurrency}});
    }
    std::cout << Dump(out, 2) << "\n";
    return kExitOk;
  }
  std::cout << std::left << std::setw(40) << "ENDPOINT/HANDLER" << std::setw(15) << "STATE"
            << std::right << std::setw(9) << "PENDING" << std::setw(9) << "DUE" << std::setw(9)
            << "RUNNING" << std::setw(9) << "DEAD"
            << "  " << std::left << std::setw(10) << "RATE"
            << "CONCURRENCY\n";
  for (const Line& l : lines) {
    const HandlerState& st = l.status.state;
    std::cout << std::left << std::setw(40) << TerminalSafe(st.endpoint + "/" + st.handler)
              << std::setw(15) << StateWord(st, l.configured) << std::right << std::setw(9)
              << l.status.pending << std::setw(9) << l.status.due << std::setw(9)
              << l.status.running << std::setw(9) << l.status.dead << "  " << std::left
              << std::setw(10) << (l.rate.empty() ? "-" : l.rate)
              << (l.concurrency ? std::to_string(l.concurrency) : "-") << "\n";
    if (st.paused) {
      std::cout << "    paused " << st.paused_at
                << (st.paused_reason.empty() ? "" : ": " + TerminalSafe(st.paused_reason)) << "\n";
    }
    if (st.circuit == Circuit::kOpen) {
      std::cout << "    circuit open after " << st.failures << " failed attempts, until "
                << st.open_until << "\n";
    }
    if (!l.circuit.empty()) std::cout << "    circuit: " << l.circuit << "\n";
  }
  return kExitOk;
}

int HandlerPause(const std::string& path, const std::string& target, const std::string& endpoint,
                 const std::string& reason, bool pause) {
  std::vector<HandlerRef> refs;
  bool forget = false;  // resume of a handler the config no longer has
  Opened opened = LoadAndOpen(path, {.check = [&](Config& c) {
                                if (!pause && !target.empty() && endpoint.empty()) {
                                  auto ref = ResolveHandler(c, nullptr, target, "");
                                  forget =
                                      !ref.ok() && ref.status().code() == Status::Code::kNotFound;
                                  if (forget) return true;
                                }
                                refs = Targets(c, target, endpoint);
                                return !refs.empty();
                              }});
  if (!opened.inbox) return opened.exit_code;
  if (forget) return ForgetUnconfigured(opened, target);
  auto changed = opened.inbox->SetPaused(refs, pause, reason, std::chrono::system_clock::now());
  if (!changed.ok()) return ReportFailure(changed.status());
  for (const HandlerRef& r : refs) {
    std::cout << (pause ? "paused " : "resumed ") << TerminalSafe(r.endpoint + "/" + r.handler)
              << "\n";
  }
  if (*changed < static_cast<int64_t>(refs.size())) {
    std::cout << (refs.size() - static_cast<size_t>(*changed)) << " of them "
              << (pause ? "already paused" : "already running") << "\n";
  }
  return kExitOk;
}

}  // namespace hookbox::cli
