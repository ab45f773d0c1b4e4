// Jobs whose handler is not configured: see held.h.
#include "work/held.h"

#include <chrono>
#include <set>
#include <utility>

#include "ops/log.h"
#include "work/alerts.h"

namespace hookbox {

std::vector<HandlerRef> ConfiguredHandlers(const Config& config) {
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<HandlerRef> refs;
  for (const Endpoint& ep : config.endpoints) {
    for (const Route& route : ep.routes) {
      for (const HandlerSpec& h : route.handlers) {
        if (seen.emplace(ep.name, h.name).second) refs.push_back({ep.name, h.name});
      }
    }
  }
  return refs;
}

bool IsConfigured(const Config& config, const std::string& endpoint, const std::string& handler) {
  const Endpoint* ep = config.FindByName(endpoint);
  if (ep == nullptr) return false;
  for (const Route& route : ep->routes) {
    for (const HandlerSpec& h : route.handlers) {
      if (h.name == handler) return true;
    }
  }
  return false;
}

std::vector<HandlerBacklog> Unconfigured(const std::vector<HandlerBacklog>& backlog,
                                         const Config& config) {
  std::vector<HandlerBacklog> out;
  for (const HandlerBacklog& b : backlog) {
    if (!IsConfigured(config, b.endpoint, b.handler)) out.push_back(b);
  }
  return out;
}

// How many of the unfinished jobs are held: all, none yet (each is held when a worker
// claims it), or some.
std::string HeldSoFar(const HandlerBacklog& b) {
  if (b.held >= b.unfinished) return "are held";
  if (b.held == 0) return "will be held when a worker claims them";
  return "are held (" + std::to_string(b.held) + " so far, the rest when a worker claims them)";
}

std::string HeldWarning(const HandlerBacklog& b) {
  return "endpoint " + b.endpoint + ": " + std::to_string(b.unfinished) +
         " unfinished job(s) of handler " + b.handler + ", which this config does not have, " +
         HeldSoFar(b) +
         ": configure a handler of that name again, or move them with"
         " `hookbox inbox reassign " +
         b.endpoint + " " + b.handler + " NEW` or drop them with `hookbox inbox drop " +
         b.endpoint + " " + b.handler + "`";
}

void ReleaseHeldJobs(JobQueue& jobs, const Config& config, TimePoint now) {
  auto released = jobs.ReleaseHeld(ConfiguredHandlers(config), now);
  if (!released.ok()) {
    LogWarn({{"msg", "cannot release held jobs"}, {"error", released.status().ToString()}});
  } else if (*released > 0) {
    LogInfo({{"msg", "released held jobs: their handler is configured"}, {"jobs", *released}});
  }
}

int64_t WarnAboutHeldJobs(HandlerStates& states, EventStore& events, const Config& config,
                          const char* when) {
  auto backlog = states.UnfinishedByHandler();
  if (!backlog.ok()) {
    LogWarn({{"msg", "cannot count unfinished jobs by handler"},
             {"error", backlog.status().ToString()}});
    return 0;
  }
  int64_t count = 0;
  for (const HandlerBacklog& b : Unconfigured(*backlog, config)) {
    count += b.unfinished;
    LogWarn({{"msg", "jobs held: their handler is not configured"},
             {"when", when},
             {"endpoint", b.endpoint},
             {"handler", b.handler},
             {"jobs", b.unfinished},
             {"detail", HeldWarning(b)}});
    // `alerts:` handler_held (work/alerts.h), at most once per alert's repeat window.
    AlertFacts facts;
    facts.endpoint = b.endpoint;
    facts.handler = b.handler;
    facts.detail = HeldWarning(b);
    facts.fields["jobs"] = b.unfinished;
    facts.fields["when"] = when;
    (void)RaiseAlerts(events, config, AlertCondition::kHandlerHeld, facts,
                      std::chrono::system_clock::now());
  }
  return count;
}

}  // namespace hookbox
