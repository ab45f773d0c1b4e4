// What the inbox and the handlers both speak of, so that neither includes the other: the
// stored event a job runs on (HandlerEvent) and how an attempt ended (Outcome). Plain data;
// the handler interface itself is in handlers/handler.h, the storage contract in
// inbox/inbox.h, and work that runs inside the inbox's transaction in
// base/transactional_work.h.
#pragma once

#include <cstdint>
#include <string>

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
  // this attempt, the trace's flags. Each kind hands it on (http as `traceparent`, exec as
  // TRACEPARENT).
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

}  // namespace hookbox
