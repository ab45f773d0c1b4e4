// An alert's body, its storing, and the events sent without storing (see alerts.h).
#include "work/alerts.h"

#include <algorithm>

#include "base/crypto.h"
#include "base/trace.h"
#include "ops/log.h"

namespace hookbox {

std::string AlertBody(const Alert& alert, std::string_view condition, const AlertFacts& facts,
                      TimePoint at) {
  nlohmann::json body = {{"alert", condition},         {"name", alert.name},
                         {"endpoint", facts.endpoint}, {"handler", facts.handler},
                         {"event_id", facts.event_id}, {"detail", facts.detail},
                         {"at", FormatTime(at)}};
  for (const auto& [key, value] : facts.fields.items()) {
    if (!body.contains(key)) body[key] = value;
  }
  // Handler details hold whatever bytes a downstream answered: U+FFFD for what is no UTF-8.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool Wants(const Alert& alert, AlertCondition condition) {
  return std::find(alert.on.begin(), alert.on.end(), condition) != alert.on.end();
}

std::string AlertId(const Alert& alert, AlertCondition condition, std::string_view about,
                    TimePoint at) {
  return alert.name + ":" + AlertConditionName(condition) + ":" + std::string(about) + ":" +
         FormatTime(AlertWindow(alert, at));
}

TimePoint AlertWindow(const Alert& alert, TimePoint at) {
  const auto repeat = std::chrono::duration_cast<TimePoint::duration>(alert.repeat);
  return at - at.time_since_epoch() % repeat;
}

Status RaiseAlert(EventStore& events, const Alert& alert, AlertCondition condition,
                  const AlertFacts& facts, TimePoint at) {
  if (facts.endpoint == kAlertsEndpoint) return Status::Ok();
  const std::string name = AlertConditionName(condition);
  Event e;
  e.endpoint = std::string(kAlertsEndpoint);
  e.event_id = AlertId(alert, condition, facts.endpoint + "/" + facts.handler, at);
  e.id_source = "alert";
  e.event_type = name;
  e.body = AlertBody(alert, name, facts, at);
  e.body_sha256 = Sha256Hex(e.body);
  e.headers_json = "{}";
  e.handlers = {alert.name};
  e.received_at = at;
  StatusOr<AcceptResult> stored = events.Accept(e);
  if (stored.ok()) return Status::Ok();
  LogError({{"msg", "alert not stored"},
            {"alert", alert.name},
            {"condition", name},
            {"endpoint", facts.endpoint},
            {"handler", facts.handler},
            {"error", stored.status().ToString()}});
  return stored.status();
}

Status RaiseAlerts(EventStore& events, const Config& config, AlertCondition condition,
                   const AlertFacts& facts, TimePoint at) {
  Status first_failure = Status::Ok();
  for (const Alert& alert : config.alerts) {
    if (!Wants(alert, condition)) continue;
    Status s = RaiseAlert(events, alert, condition, facts, at);
    if (!s.ok() && first_failure.ok()) first_failure = std::move(s);
  }
  return first_failure;
}

HandlerEvent AlertEvent(const Alert& alert, std::string_view condition, const AlertFacts& facts,
                        TimePoint at, std::string event_id) {
  HandlerEvent e;
  e.endpoint = std::string(kAlertsEndpoint);
  e.event_id = std::move(event_id);
  e.event_type = std::string(condition);
  e.received_at = FormatTime(at);
  e.headers_json = "{}";
  e.body = AlertBody(alert, condition, facts, at);
  e.traceparent = Traceparent(EventTrace(e.endpoint, e.event_id, std::nullopt), NewSpanId());
  return e;
}

HandlerEvent SampleAlert(const Alert& alert, TimePoint at) {
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
  AlertFacts facts;
  facts.detail = "a sample alert from `hookbox alerts test " + alert.name +
                 "`: this target receives the alerts of " + alert.name;
  nlohmann::json conditions = nlohmann::json::array();
  for (AlertCondition c : alert.on) conditions.push_back(AlertConditionName(c));
  facts.fields["conditions"] = conditions;
  return AlertEvent(alert, "test", facts, at, "test:" + alert.name + ":" + std::to_string(millis));
}

}  // namespace hookbox
