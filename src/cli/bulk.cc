// `hookbox inbox retry --dead|--waiting [FILTER]` and `hookbox inbox replay [FILTER] --handler
// NAME`: the bulk verbs over the one inbox filter (inbox/filter.h). Each prints its plan first (the
// numbers of Inbox::PlanBulk, the same the console's bulk page shows), changes nothing with
// --dry-run, and acts on more than one row only with --yes. The plan also gives each
// handler's state and the drain time a --rate sets; a --rate spread of a paused handler's
// jobs is refused (it would run out during the pause, and every job run at once on
// resume). Safe beside the running daemon and other replicas: the inbox changes each job by
// a compare-and-swap (inbox_admin.h).
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <optional>

#include "cli/cli.h"
#include "inbox/bulk_pace.h"
#include "inbox/filter.h"
#include "ops/log.h"
#include "ops/terminal.h"
#include "work/held.h"

namespace hookbox::cli {
namespace {

using nlohmann::json;

json PlanJson(const BulkPlan& p) {
  return {
      {"matched", p.matched},
      {"rows", p.rows},
      {"jobs", p.jobs},
      {"jobs_by_handler", p.jobs_by_handler},
      {"oldest", p.oldest.empty() ? json(nullptr) : json(p.oldest)},
      {"newest", p.newest.empty() ? json(nullptr) : json(p.newest)},
      {"skipped",
       {{"stale", p.skipped_stale}, {"ignored", p.skipped_ignored}, {"no_job", p.skipped_no_job}}}};
}

// The words of each verb's plan and answers.
struct VerbWords {
  const char* title;    // "plan: " + title
  const char* act;      // "add --yes to " + act
  const char* skipped;  // "N without " + skipped
  const char* done;     // done + ": re-armed N job(s)"
};

VerbWords WordsOf(BulkVerb verb) {
  switch (verb) {
    case BulkVerb::kReplay:
      return {"replay handler ", "replay them", "a done job of the handler", "replay"};
    case BulkVerb::kRetryWaiting:
      return {"retry waiting jobs now", "make their waiting jobs due", "a job waiting in backoff",
              "retry --waiting"};
    case BulkVerb::kRetryDead:
      break;
  }
  return {"retry dead jobs", "re-arm their dead jobs", "a dead job", "retry --dead"};
}

void PrintPlan(BulkVerb verb, const BulkPlan& p, const std::string& handler) {
  const bool replay = verb == BulkVerb::kReplay;
  const VerbWords words = WordsOf(verb);
  std::cout << "plan: " << words.title << (replay ? TerminalSafe(handler) : "") << "\n"
            << "  rows matched       " << p.matched << "\n"
            << "  rows to " << (replay ? "replay     " : "retry      ") << p.rows << "\n"
            << "  jobs               " << p.jobs << "\n";
  for (const auto& [name, n] : p.jobs_by_handler) {
    // Under "jobs", the counts in its column; a longer name pushes its count right.
    std::cout << "    " << std::left << std::setw(15) << TerminalSafe(name) << "  " << n << "\n";
  }
  if (p.rows > 0) {
    std::cout << "  oldest event       " << TerminalSafe(p.oldest) << "\n"
              << "  newest event       " << TerminalSafe(p.newest) << "\n";
  }
  std::cout << "  skipped            " << p.skipped_stale << " stale, " << p.skipped_ignored
            << " ignored, " << p.skipped_no_job << " without " << words.skipped << "\n";
}

// Replay runs a handler the config has: a job of one it lacks would only be held
// (work/held.h). The filter's handler is resolved (ResolveFilterHandler), so it may be one
// the inbox alone still knows.
bool ReplayableOrReport(const Config& config, const EventFilter& filter) {
  if (IsConfigured(config, filter.endpoint, filter.handler)) return true;
  std::cerr << "hookbox: no handler " << TerminalSafe(filter.endpoint + "/" + filter.handler)
            << " in the config: replay runs a configured handler (its jobs would be held)\n";
  return false;
}

// The request the options describe; a bad part is reported (exit kExitBadFilter).
std::optional<BulkRequest> RequestOrReport(BulkVerb verb, const BulkArgs& args) {
  BulkRequest request;
  request.verb = verb;
  if (auto filter = FilterOrReport(args.filter)) {
    request.filter = *std::move(filter);
  } else {
    return std::nullopt;
  }
  if (verb == BulkVerb::kReplay && request.filter.handler.empty()) {
    std::cerr << "hookbox: inbox replay needs --handler NAME: the handler to run again\n";
    return std::nullopt;
  }
  if (!args.rate.empty()) {
    auto rate = ParseBulkRate(args.rate);
    if (!rate) {
      std::cerr << "hookbox: --rate takes N/s or N/min, N a positive number: "
                << TerminalSafe(args.rate) << "\n";
      return std::nullopt;
    }
    request.rate = *rate;
  }
  return request;
}

// A dry run, a refusal (`refused`: a --rate over a paused handler; or for want of --yes), or
// nothing to do: the answer without acting, as an exit code; nullopt when the verb is to act.
std::optional<int> AnswerWithoutActing(BulkVerb verb, const BulkPlan& plan, const BulkArgs& args,
                                       std::string refused, json& out) {
  if (args.dry_run) refused.clear();
  if (refused.empty() && !args.dry_run && plan.rows > 1 && !args.yes) {
    refused = std::to_string(plan.rows) + " rows match: add --yes to " + WordsOf(verb).act +
              " (nothing changed)";
  }
  if (!args.dry_run && refused.empty() && plan.rows != 0) return std::nullopt;
  if (args.json) {
    out["rearmed"] = 0;
    out["seconds"] = 0;  // the same keys whether or not it acted
    if (!refused.empty()) out["refused"] = refused;
    std::cout << Dump(out, 2) << "\n";
  } else if (args.dry_run) {
    std::cout << "dry run: nothing changed\n";
  } else if (plan.rows == 0) {
    std::cout << "nothing to do\n";
  }
  if (refused.empty()) return kExitOk;
  std::cerr << "hookbox: " << refused << "\n";
  return kExitBadFilter;
}

// The plan's handlers for --json: each one's jobs, state and pause reason.
json HandlersJson(const std::vector<PlanHandler>& handlers) {
  json out = json::array();
  for (const PlanHandler& h : handlers) {
    out.push_back({{"handler", h.name},
                   {"jobs", h.jobs},
                   {"state", HandlerStateName(h.state)},
                   {"reason", h.state.paused_reason}});
  }
  return out;
}

// A handler's state as the plan prints it: a pause with its reason.
std::string StateText(const HandlerState& st) {
  std::string text = HandlerStateName(st);
  if (st.paused && !st.paused_reason.empty()) text += " (" + TerminalSafe(st.paused_reason) + ")";
  return text;
}

// Under the plan: each handler's state, and how long the jobs take to come due.
void PrintStatesAndDrain(const BulkPlan& p, const std::vector<PlanHandler>& handlers, double rate) {
  for (const PlanHandler& h : handlers) {
    std::cout << "  handler state      " << TerminalSafe(h.name) << " " << StateText(h.state)
              << "\n";
  }
  if (rate > 0 && p.jobs > 0) {
    std::cout << "  drain time         about " << DrainSeconds(p.jobs, rate) << " s (" << p.jobs
              << " jobs due one after another at --rate; the handler's own rate: may slow it)\n";
  } else if (p.jobs > 0) {
    std::cout << "  drain time         all due now (no --rate): as fast as the handler's "
                 "concurrency and rate: allow\n";
  }
}

// The refusal of a --rate spread over a paused handler (inbox/bulk_pace.h), with the choices.
std::string PausedRefusal(const PlanHandler& paused) {
  const std::string name = TerminalSafe(paused.name);
  return "handler " + name +
         " is paused: a --rate spread starts now and would run out while it waits, and on "
         "resume every job would run at once. Resume it first (hookbox handler resume " +
         name +
         "), then run this again; or leave out --rate and give the handler a rate: in the "
         "config, which holds when it resumes (nothing changed)";
}

}  // namespace

int InboxBulk(const std::string& path, BulkVerb verb, const BulkArgs& args) {
  std::optional<BulkRequest> parsed = RequestOrReport(verb, args);
  if (!parsed) return kExitBadFilter;
  BulkRequest& request = *parsed;
  Opened opened = LoadAndOpen(path, {.endpoint = request.filter.endpoint});
  if (!opened.inbox) return opened.exit_code;
  if (int code = kExitOk;
      !ResolveFilterHandler(*opened.config, *opened.inbox, request.filter, &code)) {
    return code;
  }
  if (verb == BulkVerb::kReplay && !ReplayableOrReport(*opened.config, request.filter)) {
    return kExitUsage;
  }

  request.now = std::chrono::system_clock::now();
  auto plan = opened.inbox->PlanBulk(request);
  if (!plan.ok()) return ReportFailure(plan.status());
  json out = {{"verb", BulkVerbName(verb)}, {"dry_run", args.dry_run}, {"plan", PlanJson(*plan)}};
  auto handlers = HandlersOfPlan(*opened.inbox, *plan, request.now);
  if (!handlers.ok()) return ReportFailure(handlers.status());
  out["handlers"] = HandlersJson(*handlers);
  out["drain_seconds"] = DrainSeconds(plan->jobs, request.rate);
  if (!args.json) {
    PrintPlan(verb, *plan, request.filter.handler);
    PrintStatesAndDrain(*plan, *handlers, request.rate);
  }
  const PlanHandler* paused = PausedUnderRate(*handlers, request.rate);
  if (auto code =
          AnswerWithoutActing(verb, *plan, args, paused ? PausedRefusal(*paused) : "", out)) {
    return *code;
  }
  request.now = std::chrono::system_clock::now();
  const auto started = std::chrono::steady_clock::now();
  auto done = ActBulk(*opened.inbox, request);
  if (!done.ok()) return ReportFailure(done.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // The daemon's hookbox_bulk_jobs_rearmed_total is that process's counter, which this one
  // cannot reach: the count goes to stdout and, as the daemon logs the console's bulk
  // actions, to one structured line on stderr (README, "Metrics").
  LogInfo({{"msg", "bulk re-armed"},
           {"by", "cli"},
           {"verb", BulkVerbName(verb)},
           {"rearmed", *done},
           {"seconds", seconds},
           {"endpoint", request.filter.endpoint},
           {"handler", request.filter.handler}});
  if (args.json) {
    out["rearmed"] = *done;
    out["seconds"] = seconds;
    std::cout << Dump(out, 2) << "\n";
  } else {
    std::cout << WordsOf(verb).done << ": re-armed " << *done << " job(s) in " << std::fixed
              << std::setprecision(3) << seconds << " s"
              << (request.rate > 0 ? ", due times spread by --rate" : "") << "\n";
  }
  return kExitOk;
}

}  // namespace hookbox::cli
