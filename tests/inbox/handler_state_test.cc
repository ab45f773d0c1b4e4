// Handler state: the operator's pause, the token bucket and the circuit breaker, as every Inbox
// backend must keep them. Part of the storage contract suite: ctest runs this binary on SQLite
// (`inbox`) and on the throwaway PostgreSQL cluster (`inbox_postgres`). Times are passed in, so
// the bucket's refill and the circuit's cooldown are tested without sleeping. The rules
// themselves (inbox/handler_gate.h) are tested alone at the end.
#include <catch2/catch.hpp>
#include <filesystem>
#include <future>
#include <set>
#include <thread>

#include "inbox/handler_gate.h"
#include "inbox/inbox.h"
#include "tests/inbox/test_inbox.h"

namespace {

using namespace hookbox;
using namespace std::chrono_literals;

const TimePoint kT0 = TimePoint(std::chrono::seconds(1'800'000'000));

Event Ev(const std::string& id, std::vector<std::string> handlers,
         const std::string& resource = "") {
  Event e;
  e.endpoint = "ep";
  e.event_id = id;
  e.id_source = "header:X-Id";
  e.event_type = "t";
  e.resource_id = resource;
  if (!resource.empty()) {
    static int64_t seq = 0;
    e.sequence_key = ++seq;
    e.sequence = std::to_string(seq);
  }
  e.body = "{\"id\":\"" + id + "\"}";
  e.body_sha256 = "sha-" + id;
  e.headers_json = "{}";
  e.handlers = std::move(handlers);
  e.received_at = kT0;
  return e;
}

void AcceptAll(TestInbox& t, int n, const std::vector<std::string>& handlers,
               const std::string& prefix = "e") {
  for (int i = 0; i < n; ++i) {
    auto r = t->Accept(Ev(prefix + std::to_string(i), handlers));
    REQUIRE(r.ok());
  }
}

std::vector<ClaimedJob> Claim(Inbox& in, TimePoint now, int max = 64,
                              const ClaimLimits& limits = {}) {
  auto c = in.ClaimJobs("test-worker", max, now, 60s, limits);
  REQUIRE(c.ok());
  return *c;
}

int CountOf(const std::vector<ClaimedJob>& jobs, const std::string& handler) {
  return static_cast<int>(
      std::count_if(jobs.begin(), jobs.end(), [&](const auto& j) { return j.handler == handler; }));
}

JobOutcome Ok(TimePoint at) {
  JobOutcome o;
  o.finished_at = at;
  return o;
}

const HandlerStatus* Find(const std::vector<HandlerStatus>& all, const std::string& handler) {
  for (const HandlerStatus& h : all) {
    if (h.state.endpoint == "ep" && h.state.handler == handler) return &h;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("handler state: a paused handler's jobs stay pending, unclaimed; resume restores") {
  TestInbox t;
  AcceptAll(t, 3, {"a", "b"});
  auto paused = t->SetPaused({{"ep", "a"}}, true, "downstream down", kT0);
  REQUIRE(paused.ok());
  CHECK(*paused == 1);

  auto first = Claim(*t.inbox, kT0);
  CHECK(CountOf(first, "a") == 0);
  CHECK(CountOf(first, "b") == 3);
  // Accepting goes on while paused.
  REQUIRE(t->Accept(Ev("late", {"a", "b"})).ok());
  CHECK(CountOf(Claim(*t.inbox, kT0 + 1h), "a") == 0);

  auto list = t->Handlers(kT0 + 1h, /*count_jobs=*/true);
  REQUIRE(list.ok());
  const HandlerStatus* a = Find(*list, "a");
  REQUIRE(a);
  CHECK(a->state.paused);
  CHECK(a->state.paused_reason == "downstream down");
  CHECK(a->state.paused_at == FormatTime(kT0));
  CHECK(a->due == 4);
  CHECK(a->running == 0);
  const HandlerStatus* b = Find(*list, "b");
  REQUIRE(b);
  CHECK_FALSE(b->state.paused);
  CHECK(b->running == 4);  // b ran on: 3, then the late one
  // Without the counts (the paused gauge's read): the handlers with a state row only.
  auto states = t->Handlers(kT0 + 1h, /*count_jobs=*/false);
  REQUIRE(states.ok());
  REQUIRE(states->size() == 1);
  CHECK(states->front().state.handler == "a");
  CHECK(states->front().state.paused);
  CHECK(states->front().due == 0);

  auto resumed = t->SetPaused({{"ep", "a"}}, false, "", kT0 + 2h);
  REQUIRE(resumed.ok());
  CHECK(*resumed == 1);
  auto after = Claim(*t.inbox, kT0 + 2h);
  CHECK(CountOf(after, "a") == 4);
  for (const ClaimedJob& j : after) {
    if (j.handler == "a") CHECK(j.budget_used == 1);  // no try was spent while paused
  }
  // Pausing what is paused, or resuming what runs, changes nothing.
  CHECK(*t->SetPaused({{"ep", "a"}}, false, "", kT0) == 0);
}

TEST_CASE("handler state: each handler's oldest due job, for the backlog alert") {
  TestInbox t;
  REQUIRE(t->Accept(Ev("early", {"a", "b"})).ok());
  Event late = Ev("late", {"a"});
  late.received_at = kT0 + 5s;
  REQUIRE(t->Accept(late).ok());
  // Before anything is due, nothing waits.
  auto ahead = t->Handlers(kT0 - 1s, /*count_jobs=*/true);
  REQUIRE(ahead.ok());
  REQUIRE(Find(*ahead, "a"));
  CHECK(Find(*ahead, "a")->oldest_due.empty());
  // b's job runs; a (paused, so the claim leaves it) has two due, the oldest since kT0.
  REQUIRE(t->SetPaused({{"ep", "a"}}, true, "", kT0).ok());
  CHECK(CountOf(Claim(*t.inbox, kT0 + 10s), "b") == 1);
  auto list = t->Handlers(kT0 + 10s, /*count_jobs=*/true);
  REQUIRE(list.ok());
  const HandlerStatus* a = Find(*list, "a");
  REQUIRE(a);
  CHECK(a->due == 2);
  CHECK(a->oldest_due == FormatTime(kT0));
  const HandlerStatus* b = Find(*list, "b");
  REQUIRE(b);
  CHECK(b->running == 1);
  CHECK(b->oldest_due.empty());
}

TEST_CASE("handler state: a pause survives reopening the database") {
  TestInbox t;
  AcceptAll(t, 2, {"a"});
  REQUIRE(t->SetPaused({{"ep", "a"}}, true, "maintenance", kT0).ok());
  t.inbox.reset();
  t.inbox = t.OpenAnother();
  CHECK(Claim(*t.inbox, kT0 + 1h).empty());
  auto list = t->Handlers(kT0, /*count_jobs=*/true);
  REQUIRE(list.ok());
  REQUIRE(Find(*list, "a"));
  CHECK(Find(*list, "a")->state.paused_reason == "maintenance");
}

TEST_CASE("handler state: a paused job still holds back the later jobs of its resource") {
  TestInbox t;
  REQUIRE(t->Accept(Ev("r1", {"a"}, "cus_1")).ok());
  REQUIRE(t->Accept(Ev("r2", {"b"}, "cus_1")).ok());
  REQUIRE(t->SetPaused({{"ep", "a"}}, true, "", kT0).ok());
  CHECK(Claim(*t.inbox, kT0).empty());
  REQUIRE(t->SetPaused({{"ep", "a"}}, false, "", kT0).ok());
  auto jobs = Claim(*t.inbox, kT0);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].handler == "a");
}

TEST_CASE("handler state: another replica honours a pause at its next claim") {
  TestInbox t;
  auto other = t.OpenAnother();
  AcceptAll(t, 2, {"a"});
  REQUIRE(t->SetPaused({{"ep", "a"}}, true, "", kT0).ok());
  CHECK(Claim(*other, kT0).empty());
  REQUIRE(t->SetPaused({{"ep", "a"}}, false, "", kT0).ok());
  CHECK(Claim(*other, kT0).size() == 2);
}

TEST_CASE("handler state: the token bucket limits claims of a rated handler only") {
  TestInbox t;
  AcceptAll(t, 30, {"a", "b"});
  ClaimLimits limits;
  limits.rates.push_back({"ep", "a", 5});  // 5/s, a burst of 5
  auto first = Claim(*t.inbox, kT0, 64, limits);
  CHECK(CountOf(first, "a") == 5);
  CHECK(CountOf(first, "b") == 30);  // unlimited, claimed as always
  for (const ClaimedJob& j : first) {
    CHECK(j.rate_due_at.has_value() == (j.handler == "a"));
  }
  CHECK(CountOf(Claim(*t.inbox, kT0, 64, limits), "a") == 0);          // bucket empty
  CHECK(CountOf(Claim(*t.inbox, kT0 + 400ms, 64, limits), "a") == 2);  // 2 tokens refilled
  CHECK(CountOf(Claim(*t.inbox, kT0 + 500ms, 64, limits), "a") == 0);  // 0.5 left: not whole
  CHECK(CountOf(Claim(*t.inbox, kT0 + 100s, 64, limits), "a") == 5);   // capped at 1 s's worth
  // A replica (another Inbox on the same database) shares the bucket.
  auto other = t.OpenAnother();
  CHECK(CountOf(Claim(*other, kT0 + 100s, 64, limits), "a") == 0);
  CHECK(CountOf(Claim(*other, kT0 + 101s, 64, limits), "a") == 5);
}

TEST_CASE("handler state: replicas claiming at once share one bucket") {
  TestInbox t;
  AcceptAll(t, 60, {"a"});
  ClaimLimits limits;
  limits.rates.push_back({"ep", "a", 10});
  std::vector<std::unique_ptr<Inbox>> replicas;
  for (int i = 0; i < 4; ++i) replicas.push_back(t.OpenAnother());
  std::vector<std::future<int>> claims;
  for (auto& r : replicas) {
    Inbox* in = r.get();
    claims.push_back(std::async(std::launch::async, [in, &limits] {
      int n = 0;
      for (int round = 0; round < 5; ++round) {
        auto c = in->ClaimJobs("w", 64, kT0, 60s, limits);
        if (c.ok()) n += static_cast<int>(c->size());
      }
      return n;
    }));
  }
  int total = 0;
  for (auto& f : claims) total += f.get();
  CHECK(total == 10);  // one burst, however many replicas ask at the same instant
}

TEST_CASE("handler state: circuit opens after N failures, probes once, closes on success") {
  TestInbox t;
  AcceptAll(t, 5, {"a"});
  const CircuitLimit limit{3, 10s};
  const HandlerRef a{"ep", "a"};
  auto one = t->RecordCircuit(a, Outcome::kFailed, limit, kT0);
  REQUIRE(one.ok());
  CHECK_FALSE(one->has_value());
  REQUIRE(t->RecordCircuit(a, Outcome::kPermanent, limit, kT0).ok());  // not a failure
  REQUIRE(t->RecordCircuit(a, Outcome::kTimeout, limit, kT0).ok());
  auto opened = t->RecordCircuit(a, Outcome::kFailed, limit, kT0);
  REQUIRE(opened.ok());
  REQUIRE(opened->has_value());
  CHECK((*opened)->from == Circuit::kClosed);
  CHECK((*opened)->to == Circuit::kOpen);
  CHECK((*opened)->failures == 3);

  CHECK(Claim(*t.inbox, kT0 + 9s).empty());  // held for the cooldown
  auto probe = Claim(*t.inbox, kT0 + 10s);
  REQUIRE(probe.size() == 1);  // exactly one probe
  CHECK(probe[0].probe);
  CHECK(Claim(*t.inbox, kT0 + 11s).empty());  // nothing beside the probe
  auto list = t->Handlers(kT0 + 11s, /*count_jobs=*/true);
  REQUIRE(list.ok());
  CHECK(Find(*list, "a")->state.circuit == Circuit::kHalfOpen);

  // The probe fails: open again for another cooldown.
  auto reopened = t->RecordCircuit(a, Outcome::kFailed, limit, kT0 + 12s);
  REQUIRE(reopened.ok());
  REQUIRE(reopened->has_value());
  CHECK((*reopened)->to == Circuit::kOpen);
  CHECK(Claim(*t.inbox, kT0 + 21s).empty());
  auto second = Claim(*t.inbox, kT0 + 22s);
  REQUIRE(second.size() == 1);
  REQUIRE(t->FinishJob(second[0], Ok(kT0 + 23s)).ok());
  auto closed = t->RecordCircuit(a, Outcome::kOk, limit, kT0 + 23s);
  REQUIRE(closed.ok());
  REQUIRE(closed->has_value());
  CHECK((*closed)->to == Circuit::kClosed);
  CHECK(Claim(*t.inbox, kT0 + 23s).size() == 3);  // the rest, all at once
}

TEST_CASE("handler state: a probe whose worker died is followed by another after its lease") {
  TestInbox t;
  AcceptAll(t, 3, {"a"});
  const CircuitLimit limit{1, 1s};
  REQUIRE(t->RecordCircuit({"ep", "a"}, Outcome::kFailed, limit, kT0).ok());
  auto probe = Claim(*t.inbox, kT0 + 1s);  // 60 s lease
  REQUIRE(probe.size() == 1);
  CHECK(Claim(*t.inbox, kT0 + 30s).empty());
  auto again = Claim(*t.inbox, kT0 + 62s);
  REQUIRE(again.size() == 1);
  CHECK_FALSE(again[0].probe);  // still half-open: no new transition
}

TEST_CASE("handler state: a resume closes an open or half-open circuit") {
  TestInbox t;
  AcceptAll(t, 4, {"a"});
  const CircuitLimit limit{1, 1h};
  REQUIRE(t->RecordCircuit({"ep", "a"}, Outcome::kFailed, limit, kT0).ok());
  CHECK(Claim(*t.inbox, kT0 + 1s).empty());  // open for an hour
  auto resumed = t->SetPaused({{"ep", "a"}}, false, "", kT0 + 2s);
  REQUIRE(resumed.ok());
  CHECK(*resumed == 1);  // it was running, but its circuit was not closed
  auto list = t->Handlers(kT0 + 2s, /*count_jobs=*/false);
  REQUIRE(list.ok());
  CHECK(Find(*list, "a")->state.circuit == Circuit::kClosed);
  CHECK(Find(*list, "a")->state.failures == 0);
  CHECK(Claim(*t.inbox, kT0 + 2s).size() == 4);                   // all at once, no probe
  CHECK(*t->SetPaused({{"ep", "a"}}, false, "", kT0 + 3s) == 0);  // now nothing to do

  // Half-open likewise.
  AcceptAll(t, 2, {"b"}, "b");
  REQUIRE(t->RecordCircuit({"ep", "b"}, Outcome::kFailed, CircuitLimit{1, 1s}, kT0).ok());
  REQUIRE(Claim(*t.inbox, kT0 + 5s).size() == 1);  // the probe: half-open
  REQUIRE(*t->SetPaused({{"ep", "b"}}, false, "", kT0 + 6s) == 1);
  auto after = t->Handlers(kT0 + 6s, /*count_jobs=*/false);
  REQUIRE(after.ok());
  CHECK(Find(*after, "b")->state.circuit == Circuit::kClosed);
  CHECK(Claim(*t.inbox, kT0 + 6s).size() == 1);  // the other, beside the probe's lease
}

TEST_CASE("lanes: a claim takes of each handler at most its free slots, the others behind it") {
  TestInbox t;
  AcceptAll(t, 30, {"slow"}, "s");  // a backlog ahead of everything else in due order
  AcceptAll(t, 6, {"fast"}, "f");
  AcceptAll(t, 3, {"other"}, "o");  // not in the slots: bounded by max alone
  ClaimLimits limits;
  limits.slots = {{"ep", "slow", 1}, {"ep", "fast", 4}};
  auto first = Claim(*t.inbox, kT0, 64, limits);
  CHECK(CountOf(first, "slow") == 1);
  CHECK(CountOf(first, "fast") == 4);
  CHECK(CountOf(first, "other") == 3);
  std::set<int64_t> ids;
  for (const ClaimedJob& j : first) ids.insert(j.job_id);
  CHECK(ids.size() == first.size());  // no job twice

  // A handler with no free slot is left out; `max` still bounds the whole claim.
  limits.slots = {{"ep", "slow", 0}, {"ep", "fast", 4}};
  auto second = Claim(*t.inbox, kT0, 1, limits);
  REQUIRE(second.size() == 1);
  CHECK(second[0].handler == "fast");
  for (const ClaimedJob& j : second) CHECK(ids.insert(j.job_id).second);
  auto third = Claim(*t.inbox, kT0, 64, limits);
  CHECK(CountOf(third, "slow") == 0);
  CHECK(CountOf(third, "fast") == 1);  // the last one

  // Without slots, the claim is as before: the backlog first, up to max.
  auto plain = Claim(*t.inbox, kT0, 5);
  CHECK(CountOf(plain, "slow") == 5);
}

TEST_CASE("lanes: the slots bound a paused or rated handler's claim too") {
  TestInbox t;
  AcceptAll(t, 5, {"a"});
  REQUIRE(t->SetPaused({{"ep", "a"}}, true, "", kT0).ok());
  REQUIRE(t->SetPaused({{"ep", "a"}}, false, "", kT0).ok());  // a state row, closed: apart
  ClaimLimits limits;
  limits.rates = {{"ep", "a", 100}};
  limits.slots = {{"ep", "a", 2}};
  CHECK(Claim(*t.inbox, kT0, 64, limits).size() == 2);
  limits.slots = {{"ep", "a", 0}};
  CHECK(Claim(*t.inbox, kT0, 64, limits).empty());
}

TEST_CASE("handler gate: refill, cap, floor and the circuit's rules") {
  HandlerState s;
  s.endpoint = "ep";
  s.handler = "a";
  const HandlerRate rate{"ep", "a", 0.5};  // 30/min: a bucket of 1
  CHECK(RefilledTokens(s, 0.5, kT0) == 1.0);
  GateDecision d = DecideClaim(s, &rate, kT0);
  CHECK_FALSE(d.unlimited);
  CHECK(d.budget == 1);
  AfterClaim(s, &rate, d, 1, kT0, 60s);
  CHECK(DecideClaim(s, &rate, kT0 + 1s).budget == 0);
  CHECK(DecideClaim(s, &rate, kT0 + 2s).budget == 1);
  // A replica with a clock behind never moves the refill time back.
  AfterClaim(s, &rate, DecideClaim(s, &rate, kT0 - 5s), 0, kT0 - 5s, 60s);
  CHECK(s.refilled_at == FormatTime(kT0));
  CHECK(DecideClaim(HandlerState{}, nullptr, kT0).unlimited);

  HandlerState c;
  const CircuitLimit limit{2, 5s};
  CHECK_FALSE(ApplyOutcome(c, Outcome::kFailed, limit, kT0));
  CHECK_FALSE(ApplyOutcome(c, Outcome::kOk, limit, kT0));  // ok resets the count
  CHECK_FALSE(ApplyOutcome(c, Outcome::kFailed, limit, kT0));
  auto t = ApplyOutcome(c, Outcome::kTimeout, limit, kT0);
  REQUIRE(t);
  CHECK(t->to == Circuit::kOpen);
  CHECK(c.open_until == FormatTime(kT0 + 5s));
  CHECK(DecideClaim(c, nullptr, kT0 + 4s).budget == 0);
  GateDecision probe = DecideClaim(c, nullptr, kT0 + 5s);
  CHECK(probe.probe);
  CHECK(probe.budget == 1);
  HandlerState paused;
  paused.paused = true;
  CHECK(DecideClaim(paused, nullptr, kT0).budget == 0);
  CHECK_FALSE(DecideClaim(paused, nullptr, kT0).unlimited);
}

TEST_CASE("handler state: one word for each, a pause named before its circuit") {
  HandlerState st;
  CHECK(std::string(HandlerStateName(st)) == "running");
  st.circuit = Circuit::kOpen;
  CHECK(std::string(HandlerStateName(st)) == "circuit-open");
  st.circuit = Circuit::kHalfOpen;
  CHECK(std::string(HandlerStateName(st)) == "half-open");
  st.paused = true;  // what the operator did is what holds it: named first
  CHECK(std::string(HandlerStateName(st)) == "paused");
}
