// The receive pipeline, one delivery at a time:
//   route -> verify -> identify -> accept -> answer
// route: path -> endpoint (404 unknown path, 405 not POST); verify: the provider's signature
// over the raw body, before anything else reads it (401); identify: event id, type, resource,
// sequence (400 if a field breaks its bounds); accept: one inbox transaction (200 accepted,
// duplicate, stale or ignored; 422 strict_body conflict; 503 storage failure); answer: the
// short JSON body and one log line.
//
// Thread-safe: Receive() runs on every HTTP worker thread at once. The config is swapped as a
// whole (SIGHUP) and each delivery sees one version of it from start to end.
#pragma once

#include <atomic>
#include <memory>

#include "config/config.h"
#include "inbox/inbox.h"
#include "ops/clock.h"
#include "receive/delivery.h"

namespace hookbox {

class Receiver final {
 public:
  Receiver(std::shared_ptr<const Config> config, Inbox& inbox, const Clock& clock);

  Answer Receive(const Delivery& delivery) const;

  void SwapConfig(std::shared_ptr<const Config> config) { config_.store(std::move(config)); }
  std::shared_ptr<const Config> config() const { return config_.load(); }

 private:
  std::atomic<std::shared_ptr<const Config>> config_;
  Inbox& inbox_;
  const Clock& clock_;
};

// The names of the handlers whose route's event globs match `event_type`, in config order,
// each once. Empty: the event is stored as `ignored`.
std::vector<std::string> MatchHandlers(const Endpoint& endpoint, const std::string& event_type);

// The request headers worth keeping with the event, as a JSON object. Credential headers
// (Authorization, Cookie, X-Gitlab-Token, ...) are left out: the inbox must hold no secret.
std::string StoredHeadersJson(const Headers& headers);

}  // namespace hookbox
