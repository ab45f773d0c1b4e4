// Failure alerts (README, "Failure alerts"): what an alert's target receives. An alert is an
// event of the internal endpoint kAlertsEndpoint (config.h), whose handlers are the alerts'
// targets (http, signed as a Standard Webhook with the alert's key, or exec): so it is
// stored, retried with backoff, leased and seen like any event. Its body is one JSON object:
//   {"alert": CONDITION, "name": ALERT, "endpoint", "handler", "event_id", "detail", "at"}
// with the condition's own fields beside them; its type is the condition, which the alert's
// route takes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/job.h"
#include "config/config.h"
#include "inbox/event_store.h"
#include "ops/clock.h"

namespace hookbox {

// What an alert says of what happened: the endpoint, handler and event it is about (any may
// be empty), a line for a person, and the condition's own fields.
struct AlertFacts {
  std::string endpoint, handler, event_id, detail;
  nlohmann::json fields = nlohmann::json::object();
};

// Whether the alert's `on:` names `condition`.
bool Wants(const Alert& alert, AlertCondition condition);

// An alert's id, the target's webhook-id and the inbox's dedupe key: the alert, the
// condition, what it is `about` ("<endpoint>/<handler>", or the instance for
// storage_unavailable) and the start of the `repeat:` window `at` falls in.
std::string AlertId(const Alert& alert, AlertCondition condition, std::string_view about,
                    TimePoint at);

// The alert's body (above), `at` as RFC 3339.
std::string AlertBody(const Alert& alert, std::string_view condition, const AlertFacts& facts,
                      TimePoint at);

// Stores `condition` for each alert whose `on:` has it, as an event of kAlertsEndpoint for
// that alert's target. Its id is the alert, the condition, the endpoint/handler it is about
// and the start of the `repeat:` window `at` falls in: the first raise in a window is
// stored, every later one (on any replica: the inbox's dedupe on the id) is a duplicate and
// sends nothing. Conditions of kAlertsEndpoint's own jobs raise nothing (an alert that
// cannot be sent is in the inbox, dead, for `inbox list` and hookbox_jobs). An alert that
// cannot be stored is an error line; the first such failure is returned, after trying every
// alert.
Status RaiseAlerts(EventStore& events, const Config& config, AlertCondition condition,
                   const AlertFacts& facts, TimePoint at);
// The same for one alert, whatever its `on:` says (the backlog watch, whose threshold is
// each alert's own backlog_age).
Status RaiseAlert(EventStore& events, const Alert& alert, AlertCondition condition,
                  const AlertFacts& facts, TimePoint at);

// The start of the `repeat:` window `at` falls in (windows are aligned to the epoch).
TimePoint AlertWindow(const Alert& alert, TimePoint at);

// An alert as its target receives it when it is sent without being stored (a sample, or
// storage_unavailable): the event its handler runs, with `event_id` and a new trace.
HandlerEvent AlertEvent(const Alert& alert, std::string_view condition, const AlertFacts& facts,
                        TimePoint at, std::string event_id);

// `hookbox alerts test NAME`: a sample of the alert as its target receives one, condition
// `test`, never stored; its id is new each time, so a target's dedupe lets every test in.
HandlerEvent SampleAlert(const Alert& alert, TimePoint at);

}  // namespace hookbox
