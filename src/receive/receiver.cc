// The receive pipeline (see receiver.h). A Status becomes an HTTP status by HttpStatusFor
// (base/http_status.h), the one mapping, which the console answers by too.
#include "receive/receiver.h"

#include <fnmatch.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "base/form.h"
#include "base/http_status.h"
#include "base/trace.h"
#include "ops/daemon_metrics.h"
#include "ops/log.h"
#include "ops/storage_health.h"
#include "receive/allow.h"
#include "receive/delivery_spans.h"
#include "receive/examine.h"
#include "receive/identify.h"
#include "verify/verify.h"
#include "work/attempt.h"
#include "work/liveness.h"

namespace hookbox {
namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// `status` {"error":...}
Answer ErrorAnswer(int status, const std::string& message) {
  return Answer{status, Dump(json{{"error", message}}), {}};
}

// The headers that carry credentials, and every provider's token header (GitLab's
// X-Gitlab-Token): the inbox holds no secret.
Headers CredentialHeaders() {
  Headers names = {
      {"Authorization", ""}, {"Proxy-Authorization", ""}, {"Cookie", ""}, {"X-Api-Key", ""}};
  for (const ProviderSpec& provider : Providers()) {
    if (!provider.token_header.empty()) names.emplace(provider.token_header, "");
  }
  return names;
}

bool IsCredentialHeader(std::string_view name) {
  static const Headers kCredentials = CredentialHeaders();
  return kCredentials.count(name) > 0;
}

// 200 {"status":..., "event_id":...}: the verdict on a stored event (accepted, duplicate, ...).
Answer VerdictAnswer(const char* status, const std::string& event_id) {
  // "status" first, as producers' logs and docs/DESIGN.md ("Answers") show it.
  std::string body = "{\"status\":";
  AppendJsonString(body, status);
  body += ",\"event_id\":";
  AppendJsonString(body, event_id);
  body += '}';
  return Answer{200, std::move(body), {}};
}

// hookbox_signature_failures_total's reason label: the verify reason, shortened.
const char* FailureReason(const std::string& what) {
  if (what == reason::kMissing) return "missing";
  if (what == reason::kMalformed) return "malformed";
  if (what == reason::kMismatch) return "mismatch";
  if (what == reason::kTimestamp) return "timestamp";
  return "other";
}

// A lease owner naming this request, unique among requests in flight.
std::string RequestOwner(const Delivery& d) {
  static std::atomic<uint64_t> counter{0};
  return LeaseOwnerPrefix() + "request:" + d.remote + ":" + std::to_string(++counter);
}

// Step 1 of the pipeline, also run before a body is read (CheckHead): 404 for a path with
// no endpoint, 403 for a client outside its allow list (receive/allow.h), 405 for a method
// other than POST. The answer and its outcome label.
std::optional<std::pair<Answer, const char*>> RouteRefusal(const Endpoint* ep, const Client& client,
                                                           const Delivery& d) {
  if (!ep) return std::make_pair(ErrorAnswer(404, "no endpoint at this path"), "not_found");
  if (!AllowedFrom(*ep, client)) {
    return std::make_pair(
        ErrorAnswer(403, "this endpoint does not take deliveries from this address"), "forbidden");
  }
  if (d.method != "POST") {
    Answer a = ErrorAnswer(405, "only POST is accepted here");
    a.headers.emplace("Allow", "POST");
    return std::make_pair(std::move(a), "method_not_allowed");
  }
  return std::nullopt;
}

}  // namespace

std::optional<Answer> Receiver::CheckHead(const Delivery& head) const {
  const std::shared_ptr<const ReceiverSetup> setup = setup_.load();
  auto refused =
      RouteRefusal(setup->config->FindByPath(head.path), ClientOf(*setup->config, head), head);
  if (!refused) return std::nullopt;
  return std::move(refused->first);
}

Answer Receiver::RunSync(const ReceiverSetup& setup, const std::vector<ClaimedJob>& jobs,
                         const char* status, const std::string& event_id) const {
  bool all_ok = true;
  std::string error;
  // A duplicate of this event on any replica waits on this lock (PostgreSQL), see TakeOver.
  const std::unique_ptr<JobsHold> hold = events_.HoldJobs(jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const ClaimedJob& job = jobs[i];
    // The claim, just taken, leased every job for one run, and the first job uses it. Each
    // later job starts when the jobs before it have used up part or all of that lease, so it
    // renews the leases still held (its own and those after it) to cover its run; else a
    // duplicate arriving meanwhile would find them expired, take the event over and run this
    // job beside it.
    if (i > 0) {
      const Handler* handler = setup.handlers->Find(job.event.endpoint, job.handler);
      if (Status renewed =
              events_.RenewLeases(std::span(jobs).subspan(i), clock_.Now(), LeaseFor(handler));
          !renewed.ok()) {
        // Lost (taken over: the new owner runs these jobs) or any other failure, which is
        // storage's: run none of them.
        all_ok = false;
        error = renewed.conflict() == Status::ConflictKind::kLeaseLost ? "handler lost its lease"
                                                                       : "storage unavailable";
        break;
      }
    }
    auto outcome =
        RunAttempt(jobs_, job, *setup.config, *setup.handlers, clock_, AttemptMode::kSync);
    if (!outcome.ok()) {
      // Nothing recorded: the lease was lost, the handler is not configured (the job is
      // held), or storage failed.
      all_ok = false;
      const Status& s = outcome.status();
      error = s.conflict() == Status::ConflictKind::kLeaseLost ? "handler lost its lease"
              : s.code() == Status::Code::kNotFound            ? s.what()
                                                               : "storage unavailable";
    } else if (outcome->outcome != Outcome::kOk) {
      all_ok = false;
      error = std::string("handler ") + job.handler + " " + OutcomeName(outcome->outcome);
    }
  }
  if (!all_ok) return ErrorAnswer(500, error);
  return VerdictAnswer(status, event_id);
}

Answer Receiver::TakeOver(const ReceiverSetup& setup, const Endpoint& endpoint,
                          const std::string& event_id, const std::string& owner) const {
  const auto deadline = std::chrono::steady_clock::now() + endpoint.sync_wait;
  for (;;) {
    auto claim =
        events_.ClaimEvent(endpoint.name, event_id, owner, clock_.Now(), LeaseFor(*setup.handlers));
    if (!claim.ok()) return ErrorAnswer(HttpStatusFor(claim.status()), claim.status().what());
    switch (claim->state) {
      case EventClaim::State::kSettled:
        return VerdictAnswer("duplicate", event_id);
      case EventClaim::State::kClaimed:
        return RunSync(setup, claim->jobs, "duplicate", event_id);
      case EventClaim::State::kBusy:
        break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      auto secs = std::chrono::ceil<std::chrono::seconds>(endpoint.sync_wait).count();
      const Status refused = Status::Conflict(Status::ConflictKind::kEventBusy,
                                              "this event is being processed by another delivery");
      Answer busy = ErrorAnswer(HttpStatusFor(refused), refused.what());
      busy.headers.emplace("Retry-After", std::to_string(std::max<int64_t>(1, secs)));
      return busy;
    }
    // Wait on the first request's lock where the backend has one (PostgreSQL: a row lock
    // held for the whole run, on whichever replica); else, or when it is not held yet or
    // its holder died, poll the lease.
    if (!events_.AwaitEvent(endpoint.name, event_id,
                            std::chrono::ceil<std::chrono::milliseconds>(deadline - now))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

Receiver::Receiver(ReceiverSetup setup, EventStore& events, JobQueue& jobs, const Clock& clock,
                   std::function<void()> on_jobs)
    : setup_(Bind(std::move(setup))),
      events_(events),
      jobs_(jobs),
      clock_(clock),
      on_jobs_(std::move(on_jobs)) {}

std::shared_ptr<const ReceiverSetup> Receiver::Bind(ReceiverSetup setup) {
  setup.verifiers.clear();
  if (setup.config) {
    setup.verifiers.reserve(setup.config->endpoints.size());
    for (const Endpoint& endpoint : setup.config->endpoints) setup.verifiers.emplace_back(endpoint);
  }
  return std::make_shared<const ReceiverSetup>(std::move(setup));
}

bool RouteMatches(const Route& route, const std::string& event_type, std::string_view body) {
  const bool typed = std::any_of(route.events.begin(), route.events.end(), [&](const auto& glob) {
    return fnmatch(glob.c_str(), event_type.c_str(), 0) == 0;
  });
  return typed && std::all_of(route.where.begin(), route.where.end(),
                              [&](const FieldMatch& m) { return FieldMatches(body, m); });
}

std::vector<std::string> MatchHandlers(const Endpoint& endpoint, const std::string& event_type,
                                       std::string_view body) {
  std::vector<std::string> names;
  for (const Route& route : endpoint.routes) {
    if (!RouteMatches(route, event_type, body)) continue;
    for (const HandlerSpec& h : route.handlers) {
      if (std::find(names.begin(), names.end(), h.name) == names.end()) names.push_back(h.name);
    }
  }
  return names;
}

std::string StoredHeadersJson(const Headers& headers) {
  // Written directly, once per delivery, with what a JSON object would give: names in byte
  // order, and the values of a name that occurs more than once (same spelling) joined by ", ".
  using Header = std::pair<const std::string, std::string>;
  std::vector<const Header*> kept;
  kept.reserve(headers.size());
  for (const Header& h : headers) {
    if (!IsCredentialHeader(h.first)) kept.push_back(&h);
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const Header* a, const Header* b) { return a->first < b->first; });
  std::string out = "{";
  for (size_t i = 0; i < kept.size();) {
    const std::string& name = kept[i]->first;
    size_t end = i + 1;
    while (end < kept.size() && kept[end]->first == name) ++end;
    if (i > 0) out += ',';
    AppendJsonString(out, name);
    out += ':';
    if (end == i + 1) {
      AppendJsonString(out, kept[i]->second);
    } else {
      std::string joined = kept[i]->second;
      for (size_t k = i + 1; k < end; ++k) joined += ", " + kept[k]->second;
      AppendJsonString(out, joined);
    }
    i = end;
  }
  out += '}';
  return out;
}

namespace {

// What is logged and counted of one delivery, whatever its answer: Finish writes the
// delivery's log line and counts it once.
struct DeliveryRecord {
  explicit DeliveryRecord(const Delivery& d)
      : delivery(d), log{{"msg", "delivery"}, {"remote", d.remote}, {"path", d.path}}, spans(d) {}

  Answer Finish(Answer answer, const char* outcome) {
    // A sync endpoint's verdict with an error answer: its handler failed or was busy.
    const char* counted = !stored || answer.status < 400 ? outcome
                          : answer.status == 409         ? "sync_busy"
                                                         : "sync_failed";
    Metrics().deliveries.With({endpoint_label, counted}).Inc();
    Metrics().recent_deliveries.Add(counted, std::chrono::system_clock::now());
    log["outcome"] = outcome;
    log["status"] = answer.status;
    log["latency_ms"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    if (answer.status >= 500)
      LogError(log);
    else if (answer.status >= 400)
      LogWarn(log);
    else
      LogInfo(log);
    if (spans.on()) spans.Finish(delivery, endpoint_label, client, answer.status, outcome);
    return answer;
  }

  // The identified event, and its trace (base/trace.h): the producer's traceparent, else one
  // derived from the id, the trace inbox show and every attempt's log line name. A
  // duplicate's line carries its own delivery's.
  void LogIdentity(const std::string& endpoint, const Identity& id) {
    log["event_id"] = id.event_id;
    if (!id.event_type.empty()) log["event_type"] = id.event_type;
    if (!id.resource_id.empty() && !id.sequence.empty() && !id.sequence_key) {
      log["warning"] = "sequence is neither an integer nor an RFC 3339 time: not ordered";
    }
    TraceContext trace = EventTrace(endpoint, id.event_id, TraceparentHeader(delivery.headers));
    if (spans.on()) spans.Identified(trace, id.event_id, id.event_type);
    log["trace_id"] = std::move(trace.trace_id);
  }

  // The inbox refused the event: another body under a stored id (strict_body), or storage.
  Answer Refused(const Status& s) {
    const bool conflict = s.conflict() == Status::ConflictKind::kBodyDiffers;
    if (conflict)
      log["body_changed"] = true;
    else
      log["error"] = s.ToString();
    return Finish(ErrorAnswer(HttpStatusFor(s), s.what()),
                  conflict ? "body_conflict" : "storage_error");
  }

  const Delivery& delivery;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  json log;
  DeliverySpans spans;         // tracing.otlp's receive and accept spans; off: one flag
  std::string client;          // the client's address, when spans are on
  std::string endpoint_label;  // "" until routed: unknown paths must not add label values
  bool stored = false;         // the inbox answered with a verdict
};

// The event the inbox stores for an identified delivery, whose body is `body` (Verified::body);
// on a sync endpoint, with the request's claim and the work its handlers run in the inbox's
// transaction.
Event EventFor(const ReceiverSetup& setup, const Endpoint& ep, const Delivery& d,
               std::string_view body, Identity& id, TimePoint now) {
  Event e;
  e.endpoint = ep.name;
  e.event_id = id.event_id;
  e.id_source = std::move(id.id_source);
  e.event_type = id.event_type;
  e.resource_id = std::move(id.resource_id);
  e.sequence = std::move(id.sequence);
  e.sequence_key = id.sequence_key;
  e.body_sha256 = std::move(id.body_sha256);
  e.headers_json = StoredHeadersJson(d.headers);
  e.body = body;
  e.handlers = MatchHandlers(ep, e.event_type, body);
  e.strict_body = ep.strict_body;
  e.dedupe_body = ep.dedupe_body;
  e.received_at = now;
  if (ep.mode == Mode::kSync) {
    e.sync_owner = RequestOwner(d);
    e.sync_lease = LeaseFor(*setup.handlers);
    for (const std::string& name : e.handlers) {
      const Handler* h = setup.handlers->Find(ep.name, name);
      if (h && h->transactional()) e.sync_work.emplace_back(name, h->transactional());
    }
  }
  return e;
}

// A body too large to read: past limits.max_body, or a form with more than kMaxFormFields
// fields where the provider's signature covers them parsed (twilio, verify.h
// Verifier::TooManyFormFields), so that work is bounded before the signature is checked
// (docs/SECURITY.md row 123).
std::optional<std::pair<Answer, const char*>> SizeRefusal(const Verifier& verifier,
                                                          const Delivery& d, size_t max_body) {
  if (d.body.size() > max_body) {
    return std::make_pair(ErrorAnswer(413, "body larger than limits.max_body"), "too_large");
  }
  if (verifier.TooManyFormFields(d.body, d.query)) {
    return std::make_pair(
        ErrorAnswer(413, "form body has more than " + std::to_string(kMaxFormFields) + " fields"),
        "too_large");
  }
  return std::nullopt;
}

// The answer to a delivery the provider's step refused (401, 400) or answered itself (the
// row's early answer); nullopt for an event to accept.
std::optional<Answer> ExaminedAnswer(DeliveryRecord& record, const Endpoint& ep,
                                     Examination& exam) {
  if (exam.body_resplit) record.log["body_resplit"] = true;
  if (exam.refused.code() == Status::Code::kUnauthenticated) {
    const std::string& why = exam.refused.what();
    record.log["reason"] = why;
    Metrics().signature_failures.With({ep.name, FailureReason(why)}).Inc();
    return record.Finish(ErrorAnswer(HttpStatusFor(exam.refused), why), "unauthenticated");
  }
  if (exam.answered) return record.Finish(std::move(*exam.answered), exam.outcome.data());
  if (!exam.refused.ok()) {
    return record.Finish(ErrorAnswer(HttpStatusFor(exam.refused), exam.refused.what()),
                         "bad_identity");
  }
  return std::nullopt;
}

}  // namespace

Answer Receiver::Receive(const Delivery& d) const {
  DeliveryRecord record(d);
  const std::shared_ptr<const ReceiverSetup> setup = setup_.load();
  const Config* config = setup->config.get();

  // 1. route
  const Endpoint* ep = config->FindByPath(d.path);
  if (ep) {
    record.log["endpoint"] = ep->name;
    record.endpoint_label = ep->name;
  }
  const Client client = ClientOf(*config, d);
  if (client.forwarded) record.log["client"] = client.address;
  if (record.spans.on()) record.client = client.address;
  if (auto refused = RouteRefusal(ep, client, d)) {
    return record.Finish(std::move(refused->first), refused->second);
  }
  const Verifier& verifier = setup->VerifierOf(*ep);
  if (auto refused = SizeRefusal(verifier, d, config->limits.max_body)) {
    return record.Finish(std::move(refused->first), refused->second);
  }

  // 2. verify and identify: the endpoint's provider (examine.h), before anything reads the
  // inbox.
  Examination exam;
  Examine(verifier, d, clock_.Now(), exam);
  if (std::optional<Answer> answer = ExaminedAnswer(record, *ep, exam)) return std::move(*answer);
  record.LogIdentity(ep->name, exam.identity);

  // 3. accept
  const Event e = EventFor(*setup, *ep, d, exam.verified.body, exam.identity, clock_.Now());
  if (record.spans.on()) record.spans.AcceptStarted();
  StatusOr<AcceptResult> result = events_.Accept(e);
  if (record.spans.on()) record.spans.AcceptEnded(ep->name, e.event_id, result);
  Metrics()
      .accept_latency.With({ep->name})
      .Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - record.started).count());
  // The database's faults count toward /readyz and hookbox_storage_errors_total; its
  // answers (a strict_body conflict) do not (ops/storage_health.h).
  Storage().Record(kStorageAccept, result.status());
  if (!result.ok()) return record.Refused(result.status());

  // 4. answer
  record.stored = true;
  if (result->body_changed) record.log["body_changed"] = true;
  if (!result->duplicate_of.empty()) record.log["duplicate_of"] = result->duplicate_of;
  return record.Finish(AnswerFor(*setup, *ep, e, *result), VerdictName(result->verdict));
}

// The answer to a stored delivery: its verdict; on a sync endpoint, once its handlers ran
// (or, for a duplicate, once the first delivery's did).
Answer Receiver::AnswerFor(const ReceiverSetup& setup, const Endpoint& ep, const Event& e,
                           const AcceptResult& result) const {
  const char* verdict = VerdictName(result.verdict);
  // A duplicate by body (dedupe: [id, body]) is the stored event's: its id is the answer's.
  const std::string& event_id = result.duplicate_of.empty() ? e.event_id : result.duplicate_of;
  const bool sync = ep.mode == Mode::kSync;
  if (sync && result.verdict == Verdict::kAccepted) {
    return RunSync(setup, result.claimed, verdict, event_id);
  }
  if (sync && result.verdict == Verdict::kDuplicate) {
    return TakeOver(setup, ep, event_id, e.sync_owner);
  }
  if (result.verdict == Verdict::kAccepted && on_jobs_) on_jobs_();
  return VerdictAnswer(verdict, event_id);
}

}  // namespace hookbox
