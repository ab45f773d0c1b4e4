// What the inbox and the handlers both speak of, so that neither includes the other: the
// stored event a job runs on (HandlerEvent), how an attempt ended (Outcome), and the `sql`
// kind's statements (SqlWork), which run inside the inbox's own transaction. Plain data;
// the handler interface itself is in handlers/handler.h, the storage contract in
// inbox/inbox.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hookbox {

// The stored event, as every handler kind sees it.
struct HandlerEvent {
  std::string endpoint;
  std::string event_id;
  std::string event_type;
  std::string resource_id;
  std::string sequence;
  std::string body;
  std::string headers_json;  // the stored request headers (credentials left out)
  std::string received_at;   // RFC 3339, as stored
  int attempt = 1;           // 1 for the first try
  // The job's run: 0 for the first, n after its n-th replay (`hookbox inbox replay`).
  int generation = 0;
  // The attempt's W3C `traceparent` (base/trace.h): the event's trace id, a span id new to
  // this attempt, the trace's flags. http sends it as `traceparent`, exec as TRACEPARENT,
  // sql binds it as :traceparent.
  std::string traceparent;
  // "<endpoint>:<event_id>" in the first run: the same on every attempt, for downstream
  // dedupe. A replay is a new run the downstream must not dedupe away, so from generation 1
  // on: "<endpoint>/replay-<generation>:<event_id>" (README, "Bulk retry and replay").
  // Endpoint names are [A-Za-z0-9_.-]+ (config.cc), so a key's first '/' or ':' ends the
  // endpoint: a ':' in a first run's key, a '/' in a replay's, whatever bytes the event id
  // holds. So no replay's key is another event's first-run key (with the generation after
  // the id, event "k1:replay-1"'s first run had the key of k1's first replay, and a sender
  // chooses an unsigned id), and no two (endpoint, event id, generation) share a key.
  std::string IdempotencyKey() const {
    if (generation == 0) return endpoint + ":" + event_id;
    return endpoint + "/replay-" + std::to_string(generation) + ":" + event_id;
  }
};

enum class Outcome { kOk, kFailed, kTimeout, kPermanent };
// As the attempts table spells it.
inline const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kPermanent:
      return "permanent";
  }
  return "?";
}

// The named parameters a `sql` statement may use, and the event's value for one (nullopt:
// not one of them). The sql handler refuses any other name at load; the backends bind these.
// :generation is the job's run, as exec's HOOKBOX_REPLAY_GENERATION and http's
// X-Hookbox-Replay: 0 for the first, n after n replays. It is a number (bound as an integer,
// so that `:generation = 0` holds on SQLite, which does not equate the text '0' with 0).
inline constexpr std::string_view kSqlParameters[] = {
    ":event_id", ":endpoint",    ":type",       ":resource",   ":sequence",
    ":body",     ":received_at", ":generation", ":traceparent"};
struct EventParam {
  const std::string* text = nullptr;  // null: the value is `number`
  int64_t number = 0;
};
inline std::optional<EventParam> SqlParameter(const HandlerEvent& e, std::string_view name) {
  if (name == ":event_id") return EventParam{&e.event_id};
  if (name == ":endpoint") return EventParam{&e.endpoint};
  if (name == ":type") return EventParam{&e.event_type};
  if (name == ":resource") return EventParam{&e.resource_id};
  if (name == ":sequence") return EventParam{&e.sequence};
  if (name == ":body") return EventParam{&e.body};
  if (name == ":received_at") return EventParam{&e.received_at};
  if (name == ":generation") return EventParam{nullptr, e.generation};
  if (name == ":traceparent") return EventParam{&e.traceparent};
  return std::nullopt;
}

// SQL to run inside the inbox's own transaction (the `sql` kind). Named parameters:
// kSqlParameters.
struct SqlWork {
  std::vector<std::string> setup;       // once at start (CREATE TABLE IF NOT EXISTS ...)
  std::vector<std::string> statements;  // per event, in the transaction that marks it done
};

}  // namespace hookbox
