// The receive pipeline, one delivery at a time:
//   route -> verify + identify (the provider, examine.h) -> accept -> answer
// route: path -> endpoint (404 unknown path, 405 not POST); verify: the provider's signature
// over the raw body, before anything else reads it (401), then the provider's answer to a
// request that is no event (Slack's challenge, Discord's PING); identify: event id, type,
// resource, sequence (400 if a field breaks its bounds); accept: one inbox transaction (200
// accepted, duplicate, stale or ignored; 422 strict_body conflict; 503 storage failure); answer:
// the short JSON body and one log line.
//
// mode: sync endpoints run their handlers inside the request (the accept transaction hands
// this request the event's jobs): 200 only once they succeeded and the row is processed,
// 500 when one failed (the job is released for the producer's retry). A duplicate arriving
// while another request runs the event waits for it up to `sync_wait`: 200 when it is
// done, a takeover when it was released, 409 with Retry-After when the wait runs out.
//
// Thread-safe: Receive() runs on every HTTP worker thread at once. The config is swapped as a
// whole (SIGHUP) and each delivery sees one version of it from start to end.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "base/delivery.h"
#include "config/config.h"
#include "handlers/handler.h"
#include "inbox/event_store.h"
#include "inbox/job_queue.h"
#include "ops/clock.h"
#include "verify/verify.h"

namespace hookbox {

// What the pipeline reads per delivery, swapped as one on reload.
struct ReceiverSetup {
  std::shared_ptr<const Config> config;
  std::shared_ptr<const HandlerSet> handlers;
  // Each of config->endpoints bound to its provider's scheme, in its order (verify.h,
  // Verifier): filled by the Receiver when it takes the setup (constructor, Swap), so that
  // the provider is looked up once per load, not per delivery.
  std::vector<Verifier> verifiers = {};

  const Verifier& VerifierOf(const Endpoint& endpoint) const {
    return verifiers[&endpoint - config->endpoints.data()];
  }
};

class Receiver final {
 public:
  // The inbox in two of its roles: the event store deliveries go into, and the job queue
  // a mode: sync request finishes its jobs through (one Inbox plays both). `on_jobs` runs
  // after an accept created jobs for the worker pool (to wake it).
  Receiver(ReceiverSetup setup, EventStore& events, JobQueue& jobs, const Clock& clock,
           std::function<void()> on_jobs = {});

  Answer Receive(const Delivery& delivery) const;
  // The checks a request passes before its body is read, for a client that waits for
  // `100 Continue`: the route and the method (the listener checks the length). An answer
  // when the request would be refused anyway; nullopt when the body should come.
  std::optional<Answer> CheckHead(const Delivery& head) const;

  void Swap(ReceiverSetup setup) { setup_.store(Bind(std::move(setup))); }
  std::shared_ptr<const ReceiverSetup> setup() const { return setup_.load(); }

 private:
  // `setup` with its verifiers, one per endpoint.
  static std::shared_ptr<const ReceiverSetup> Bind(ReceiverSetup setup);
  // The answer to a stored delivery (Receive's last step).
  Answer AnswerFor(const ReceiverSetup& setup, const Endpoint& endpoint, const Event& event,
                   const AcceptResult& result) const;
  // mode: sync: runs claimed jobs in this request; 200 `status` when all succeeded.
  Answer RunSync(const ReceiverSetup& setup, const std::vector<ClaimedJob>& jobs,
                 const char* status, const std::string& event_id) const;
  // mode: sync, a duplicate: wait for, or take over, the event's unfinished jobs.
  Answer TakeOver(const ReceiverSetup& setup, const Endpoint& endpoint, const std::string& event_id,
                  const std::string& owner) const;

  std::atomic<std::shared_ptr<const ReceiverSetup>> setup_;
  EventStore& events_;
  JobQueue& jobs_;
  const Clock& clock_;
  std::function<void()> on_jobs_;
};

// Whether an event of `event_type` with this body takes `route`: one of its event globs
// matches the type, and every one of its `where:` conditions holds of the body (README,
// "Routes by content"). The globs are tried first: a body is read only for a route whose
// events match, so routes without `where:` cost an accept nothing more than before.
bool RouteMatches(const Route& route, const std::string& event_type, std::string_view body);

// The names of the handlers of the routes the event takes (RouteMatches), in config order,
// each once. Empty: the event is stored as `ignored`.
std::vector<std::string> MatchHandlers(const Endpoint& endpoint, const std::string& event_type,
                                       std::string_view body);

// The request headers worth keeping with the event, as a JSON object. Credential headers
// (Authorization, Cookie, X-Gitlab-Token, ...) are left out: the inbox must hold no secret.
std::string StoredHeadersJson(const Headers& headers);

}  // namespace hookbox
