// Jobs whose handler is not configured (DESIGN.md, Handler names). A job names its handler
// (`name:`, or the name derived from what the handler targets), so a config edit that
// renames or removes a handler leaves its waiting jobs with no handler. Those jobs are held:
// no handler of another name runs them and none is marked dead for it. This file says which
// jobs are in that state for a given config, releases the held jobs of the handlers a
// config has (at start, at reload, and once a minute for the replicas of a rolling change),
// and words the warning that check-config, a start and a reload give about them.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "inbox/event_store.h"
#include "inbox/handler_states.h"
#include "inbox/job_queue.h"

namespace hookbox {

// Every (endpoint, handler) the config has.
std::vector<HandlerRef> ConfiguredHandlers(const Config& config);

// Whether the config has a handler of that name on that endpoint.
bool IsConfigured(const Config& config, const std::string& endpoint, const std::string& handler);

// The entries of `backlog` whose handler the config does not have.
std::vector<HandlerBacklog> Unconfigured(const std::vector<HandlerBacklog>& backlog,
                                         const Config& config);

// The warning about one handler the config lacks that still has unfinished jobs: how many,
// and what an operator can do ("configure it again, or hookbox inbox reassign / drop").
std::string HeldWarning(const HandlerBacklog& unconfigured);

// Makes the held jobs of the config's handlers due now; logs how many when any.
void ReleaseHeldJobs(JobQueue& jobs, const Config& config, TimePoint now);

// Logs HeldWarnings() for `config` against the inbox (a start or a reload); returns how many
// jobs they count. A storage error is logged and counts nothing.
int64_t WarnAboutHeldJobs(HandlerStates& states, EventStore& events, const Config& config,
                          const char* when);

}  // namespace hookbox
