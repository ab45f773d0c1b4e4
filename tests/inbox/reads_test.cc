// The Inbox contract, the operator's calls on rows (inbox.h: List, Count, DeadJobs,
// DeadJobsOf, KnownHandlers, Show, Stats, Clear): what was stored read back, the filter
// (inbox/filter.h) evaluated by each backend's SQL, keyset paging, and Clear, which forgets a
// row but never one whose job is running.
// Part of the storage contract suite, on SQLite and PostgreSQL (tests/inbox/contract.h).
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "inbox/filter.h"
#include "inbox/inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

TEST_CASE("clear forgets the row, its jobs and attempts") {
  TestInbox t;
  Accept(t, MakeEvent("c"));
  REQUIRE(Claim(t, kT0, 10, 60s).size() == 1);
  JobOutcome retry;
  retry.outcome = Outcome::kFailed;
  retry.next = JobOutcome::Next::kRetry;
  retry.next_attempt_at = kT0 + 1h;
  retry.finished_at = kT0 + 1s;
  Accept(t, MakeEvent("waits"));
  auto waits = Claim(t, kT0 + 1s);
  REQUIRE(waits.size() == 1);
  REQUIRE(t->FinishJob(waits[0], retry).ok());
  // A job waiting for its retry is not running: its row is cleared at once.
  CHECK(t->Clear("ep", "waits", kT0 + 2s).ok());
  // A claim whose worker died: its lease ran out, so nothing runs it any more.
  CHECK(t->Clear("ep", "c", kT0 + 61s).ok());
  CHECK(t.Count("SELECT count(*) FROM inbox") == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 0);
  CHECK(t.Count("SELECT count(*) FROM attempts") == 0);
  CHECK(t->Clear("ep", "c", kT0 + 61s).code() == Status::Code::kNotFound);
  CHECK(Accept(t, MakeEvent("c")) == Verdict::kAccepted);
}

TEST_CASE("clear refuses a row whose job holds a live lease, and changes nothing") {
  // A clear under a running attempt would discard it, and the next event of its resource
  // would then run beside it.
  TestInbox t;
  Accept(t, MakeEvent("first", {"h"}, "order-1", 1));
  Accept(t, MakeEvent("second", {"h"}, "order-1", 2));
  auto running = Claim(t, kT0, 10, 60s);
  REQUIRE(running.size() == 1);
  REQUIRE(running[0].event.event_id == "first");
  Status refused = t->Clear("ep", "first", kT0 + 30s);
  CHECK(refused.code() == Status::Code::kConflict);
  CHECK(refused.conflict() == Status::ConflictKind::kEventBusy);
  CHECK(refused.what() == "event is being processed");
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'first'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 2);
  CHECK(t.Count("SELECT count(*) FROM attempts") == 1);
  // The order holds: the resource's next job waits for the running one, whose result stands.
  CHECK(Claim(t, kT0 + 30s).empty());
  REQUIRE(t->FinishJob(running[0], Done(kT0 + 31s)).ok());
  auto next = Claim(t, kT0 + 32s);
  REQUIRE(next.size() == 1);
  CHECK(next[0].event.event_id == "second");
  // Finished, the row can go.
  CHECK(t->Clear("ep", "first", kT0 + 33s).ok());

  // A sync request's jobs are leased from the accept on: refused too.
  Event e = MakeEvent("sync-1");
  e.sync_owner = "request-1";
  e.sync_lease = 30s;
  REQUIRE(t->Accept(e).ok());
  const Status leased = t->Clear("ep", "sync-1", kT0 + 1s);
  CHECK(leased.code() == Status::Code::kConflict);
  CHECK(leased.conflict() == Status::ConflictKind::kEventBusy);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'sync-1'") == 1);
}

TEST_CASE("List, Show and Stats read what was stored") {
  TestInbox t;
  Accept(t, MakeEvent("a"));
  Accept(t, MakeEvent("b", {}));
  auto rows = t->List({});
  REQUIRE(rows.ok());
  CHECK(rows->size() == 2);
  auto pending = t->List({.filter = {.endpoint = "ep", .status = "pending"}, .limit = 10});
  REQUIRE(pending.ok());
  REQUIRE(pending->size() == 1);
  CHECK((*pending)[0].event_id == "a");
  auto detail = t->Show("ep", "a");
  REQUIRE(detail.ok());
  CHECK(detail->row.body == "{}");
  REQUIRE(detail->jobs.size() == 1);
  CHECK(detail->jobs[0].handler == "h");
  CHECK(t->Show("ep", "zz").status().code() == Status::Code::kNotFound);
  auto stats = t->Stats();
  REQUIRE(stats.ok());
  CHECK((*stats)["ep"]["pending"] == 1);
  CHECK((*stats)["ep"]["ignored"] == 1);
}

TEST_CASE("Show reads each of a job's fields and its attempts") {
  TestInbox t;
  Accept(t, MakeEvent("s", {"h1", "h2"}));
  auto claimed = Claim(t, kT0, 1, 60s);  // h1's job: running, leased
  REQUIRE(claimed.size() == 1);
  JobOutcome failed = RetryAt(kT0 + 1h);
  failed.finished_at = kT0 + 1s;
  failed.detail = "exit 3";
  REQUIRE(t->FinishJob(claimed[0], failed).ok());
  claimed = Claim(t, kT0 + 2s, 1, 60s);  // h2's job, now running
  REQUIRE(claimed.size() == 1);

  auto d = t->Show("ep", "s");
  REQUIRE(d.ok());
  REQUIRE(d->jobs.size() == 2);
  const JobRow& waiting = d->jobs[0];
  CHECK(waiting.handler == "h1");
  CHECK(waiting.status == "pending");
  CHECK(waiting.next_attempt_at == FormatTime(kT0 + 1h));
  CHECK(waiting.lease_owner.empty());
  CHECK(waiting.lease_until.empty());
  CHECK(waiting.last_error == "exit 3");
  CHECK(waiting.attempts == 1);
  CHECK(waiting.generation == 0);
  REQUIRE(waiting.attempt_rows.size() == 1);
  CHECK(waiting.attempt_rows[0].number == 1);
  CHECK(waiting.attempt_rows[0].started_at == FormatTime(kT0));
  CHECK(waiting.attempt_rows[0].finished_at == FormatTime(kT0 + 1s));
  CHECK(waiting.attempt_rows[0].outcome == "failed");
  CHECK(waiting.attempt_rows[0].detail == "exit 3");
  const JobRow& running = d->jobs[1];
  CHECK(running.id > waiting.id);
  CHECK(running.handler == "h2");
  CHECK(running.status == "processing");
  CHECK(running.lease_owner == "test-worker");
  CHECK(running.lease_until == FormatTime(kT0 + 62s));
  CHECK(running.last_error.empty());
  CHECK(running.attempts == 1);
  REQUIRE(running.attempt_rows.size() == 1);
  CHECK(running.attempt_rows[0].finished_at.empty());
  CHECK(running.attempt_rows[0].outcome.empty());
}

TEST_CASE("List filters by endpoint, status and time, newest first, up to the limit") {
  TestInbox t;
  auto at = [](const std::string& id, TimePoint when) {
    Event e = MakeEvent(id);
    e.received_at = when;
    return e;
  };
  Accept(t, at("old", kT0));
  Accept(t, at("mid", kT0 + 1h));
  Accept(t, at("new", kT0 + 2h));
  Event other = at("elsewhere", kT0 + 3h);
  other.endpoint = "other";
  Accept(t, other);
  auto since = t->List({.filter = {.endpoint = "ep", .since = FormatTime(kT0 + 1h)}, .limit = 10});
  REQUIRE(since.ok());
  REQUIRE(since->size() == 2);
  CHECK((*since)[0].event_id == "new");
  CHECK((*since)[1].event_id == "mid");
  CHECK((*since)[0].received_at == FormatTime(kT0 + 2h));
  auto limited = t->List({.limit = 1});
  REQUIRE(limited.ok());
  REQUIRE(limited->size() == 1);
  CHECK((*limited)[0].event_id == "elsewhere");
  auto none = t->List({.filter = {.status = "processed"}, .limit = 10});
  REQUIRE(none.ok());
  CHECK(none->empty());
}

// The one filter (inbox/filter.h), parsed as the CLI and the console parse it, and evaluated
// by each backend's SQL: the two must select the same rows from the same bodies.
std::set<std::string> Selected(TestInbox& t, std::vector<FilterOption> options) {
  auto filter = ParseFilter(options, kT0 + 24h);
  REQUIRE(filter.ok());
  auto rows = t->List({.filter = *filter, .limit = 1000});
  INFO(rows.status().ToString());
  REQUIRE(rows.ok());
  std::set<std::string> ids;
  for (const InboxRow& r : *rows) ids.insert(r.event_id);
  return ids;
}

TEST_CASE("List filters by type glob, handler and time window") {
  TestInbox t;
  auto add = [&](const std::string& id, const std::string& type, std::string handler,
                 TimePoint at) {
    Event e = MakeEvent(id, {std::move(handler)});
    e.event_type = type;
    e.received_at = at;
    Accept(t, e);
  };
  add("inv-paid", "invoice.paid", "notify", kT0);
  add("inv-created", "invoice.created", "ledger", kT0 + 1h);
  add("charge", "charge.paid", "notify", kT0 + 2h);
  add("upper", "Invoice.paid", "notify", kT0 + 3h);
  add("bracket", "a[b]c", "h", kT0 + 4h);
  add("abc", "abc", "h", kT0 + 4h);
  add("percent", "a%c", "h", kT0 + 4h);
  add("under", "a_c", "h", kT0 + 4h);
  add("slash", "a\\c", "h", kT0 + 4h);

  using Ids = std::set<std::string>;
  // Case-sensitive on both backends; * a run, ? one character, everything else itself.
  CHECK(Selected(t, {{"type", "invoice.*"}}) == Ids{"inv-paid", "inv-created"});
  CHECK(Selected(t, {{"type", "*.paid"}}) == Ids{"inv-paid", "charge", "upper"});
  CHECK(Selected(t, {{"type", "invoice.paid"}}) == Ids{"inv-paid"});
  CHECK(Selected(t, {{"type", "a?c"}}) == Ids{"abc", "percent", "under", "slash"});
  CHECK(Selected(t, {{"type", "a[b]*"}}) == Ids{"bracket"});
  CHECK(Selected(t, {{"type", "a%*"}}) == Ids{"percent"});
  CHECK(Selected(t, {{"type", "a_*"}}) == Ids{"under"});
  CHECK(Selected(t, {{"type", "a\\*"}}) == Ids{"slash"});
  CHECK(Selected(t, {{"type", "a_c"}}) == Ids{"under"});
  CHECK(Selected(t, {{"type", "*"}}).size() == 9);

  CHECK(Selected(t, {{"handler", "ledger"}}) == Ids{"inv-created"});
  CHECK(Selected(t, {{"handler", "notify"}, {"type", "invoice.*"}}) == Ids{"inv-paid"});
  CHECK(Selected(t, {{"handler", "nobody"}}).empty());

  const std::string t1 = FormatTime(kT0 + 1h), t3 = FormatTime(kT0 + 3h);
  CHECK(Selected(t, {{"since", t1}, {"until", t3}}) == Ids{"inv-created", "charge"});
  CHECK(Selected(t, {{"until", t1}}) == Ids{"inv-paid"});
  CHECK(Selected(t, {{"since", "21h"}}).size() == 6);  // now is kT0 + 24h: kT0 + 3h on
  CHECK(Selected(t, {{"status", "pending"}, {"endpoint", "ep"}, {"since", t3}}).size() == 6);
  CHECK(Selected(t, {{"endpoint", "other"}}).empty());
}

TEST_CASE("List filters by body fields: JSON pointers and form fields; other bodies never match") {
  TestInbox t;
  auto add = [&](const std::string& id, const std::string& body) {
    Event e = MakeEvent(id, {"h"}, "", std::nullopt, body);
    e.body_sha256 = "sha-of-" + id;  // text: MakeEvent's would hold the body's bytes
    Accept(t, e);
  };
  add("j1", R"({"data": {"object": {"customer": "cus_1", "amount": 150, "paid": true,
      "tags": ["x", "y"], "a/b": "slash", "m~n": "tilde", "none": null, "obj": {"k": 1}}}})");
  add("j2", R"({"data":{"object":{"customer":"cus_2","amount":"150","paid":false}}})");
  add("not-json", R"({"data":{"object":{"customer":"cus_1"}}} and then some)");
  add("broken-later", R"({"data":{"object":{"customer":"cus_1"}}, "x": tru})");
  add("binary", std::string("\xff\xfe\x00{\"data\"", 10));
  add("dups", R"({"d": 1, "d": 2, "n": 1e2, "s": "caf\u00e9", "z": "a\u0000b"})");
  add("f1", "From=%2B15551234&Body=hello+world&To=x");
  add("f2", "Body=hello%20world");
  add("f3", "XBody=hello+world&Body=hellow");
  add("f4", std::string("junk\0x&To=y", 11));
  add("empty", "");

  using Ids = std::set<std::string>;
  auto where = [&](std::vector<std::string> matches) {
    std::vector<FilterOption> options;
    for (std::string& m : matches) options.emplace_back("where", std::move(m));
    return Selected(t, options);
  };
  CHECK(where({"/data/object/customer=cus_1"}) == Ids{"j1"});
  CHECK(where({"/data/object/customer=cus_2"}) == Ids{"j2"});
  // A number compares as its JSON text, so it matches the string of the same text too.
  CHECK(where({"/data/object/amount=150"}) == Ids{"j1", "j2"});
  CHECK(where({"/data/object/amount=150.0"}).empty());
  CHECK(where({"/data/object/paid=true"}) == Ids{"j1"});
  CHECK(where({"/data/object/paid=false"}) == Ids{"j2"});
  CHECK(where({"/data/object/tags/1=y"}) == Ids{"j1"});
  CHECK(where({"/data/object/tags/01=y"}).empty());
  CHECK(where({"/data/object/tags/-1=y"}).empty());
  CHECK(where({"/data/object/a~1b=slash"}) == Ids{"j1"});
  CHECK(where({"/data/object/m~0n=tilde"}) == Ids{"j1"});
  CHECK(where({"/data/object/none=null"}).empty());
  CHECK(where({"/data/object/none="}).empty());
  CHECK(where({"/data/object/tags=[\"x\",\"y\"]"}).empty());
  CHECK(where({"/data/object/obj/k=1"}) == Ids{"j1"});
  CHECK(where({"/data/object/customer=cus_1", "/data/object/amount=150"}) == Ids{"j1"});
  CHECK(where({"/data/object/customer=cus_1", "/data/object/paid=false"}).empty());
  CHECK(where({"/d=2"}) == Ids{"dups"});  // the last of duplicate members
  CHECK(where({"/d=1"}).empty());
  CHECK(where({"/n=1e2"}) == Ids{"dups"});  // as written
  CHECK(where({"/n=100"}).empty());
  CHECK(where({"/s=caf\xc3\xa9"}) == Ids{"dups"});
  CHECK(where({"/z=a\xef\xbf\xbd"
               "b"}) == Ids{"dups"});  // \u0000 is read as U+FFFD

  CHECK(where({"form:Body=hello world"}) == Ids{"f1", "f2"});
  CHECK(where({"form:From=+15551234"}) == Ids{"f1"});
  CHECK(where({"form:To=x"}) == Ids{"f1"});
  CHECK(where({"form:To=y"}) == Ids{"f4"});
  CHECK(where({"form:Body=hello"}).empty());
  CHECK(where({"form:Body=hellow"}) == Ids{"f3"});
  CHECK(where({"form:Body=hello world", "form:To=x"}) == Ids{"f1"});
  CHECK(where({"form:customer=cus_1"}).empty());
  // The whole inbox scanned by a pointer: every kind of body, and no error.
  CHECK(where({"/x=y"}).empty());
  CHECK(Selected(t, {{"where", "/data/object/customer=cus_1"},
                     {"endpoint", "ep"},
                     {"status", "pending"}}) == Ids{"j1"});
}

TEST_CASE("List pages by keyset and finds one event id; every row once, in order") {
  TestInbox t;
  // Several rows share a received_at, so the page boundary must break ties by id.
  std::vector<std::string> expected;  // newest first
  for (int i = 0; i < 25; ++i) {
    Event e = MakeEvent("ev-" + std::to_string(i));
    e.received_at = kT0 + std::chrono::seconds(i / 3);
    Accept(t, e);
    expected.insert(expected.begin(), e.event_id);
  }
  std::vector<std::string> seen;
  ListFilter page{.limit = 4};
  for (int pages = 0; pages < 20; ++pages) {
    auto rows = t->List(page);
    REQUIRE(rows.ok());
    for (const InboxRow& r : *rows) seen.push_back(r.event_id);
    if (rows->size() < 4) break;
    page.before_received_at = rows->back().received_at;
    page.before_id = rows->back().id;
  }
  CHECK(seen == expected);

  auto one = t->List({.event_id = "ev-7", .limit = 10});
  REQUIRE(one.ok());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].event_id == "ev-7");
  auto elsewhere = t->List({.filter = {.endpoint = "other"}, .event_id = "ev-7", .limit = 10});
  REQUIRE(elsewhere.ok());
  CHECK(elsewhere->empty());
}

TEST_CASE("DeadJobs lists dead jobs newest first with their last error, by pages") {
  TestInbox t;
  for (int i = 0; i < 3; ++i) {
    Accept(t, MakeEvent("dead-" + std::to_string(i)));
    auto jobs = t->ClaimJobs("w", 10, kT0, 30s);
    REQUIRE(jobs.ok());
    REQUIRE(jobs->size() == 1);
    JobOutcome o;
    o.outcome = Outcome::kFailed;
    o.detail = "boom " + std::to_string(i);
    o.next = JobOutcome::Next::kDead;
    o.finished_at = kT0 + 1s;
    REQUIRE(t->FinishJob(jobs->front(), o).ok());
  }
  Accept(t, MakeEvent("alive"));
  auto dead = t->DeadJobs(0, 2);
  REQUIRE(dead.ok());
  REQUIRE(dead->size() == 2);
  CHECK((*dead)[0].row.event_id == "dead-2");
  CHECK((*dead)[0].last_error == "boom 2");
  CHECK((*dead)[0].row.status == "dead");
  CHECK((*dead)[0].attempts == 1);
  CHECK((*dead)[1].row.event_id == "dead-1");
  auto rest = t->DeadJobs((*dead)[1].job_id, 2);
  REQUIRE(rest.ok());
  REQUIRE(rest->size() == 1);
  CHECK((*rest)[0].row.event_id == "dead-0");
}

TEST_CASE("Count counts what List would give without its limit; DeadJobsOf reads rows' dead jobs") {
  TestInbox t;
  for (int i = 0; i < 5; ++i) Accept(t, MakeEvent("e" + std::to_string(i), {"a", "b"}));
  Event other = MakeEvent("elsewhere");
  other.endpoint = "other";
  Accept(t, other);
  // Two rows' jobs die: e0's of both handlers, e1's of `a` only (in claim order: e0 a, e0 b,
  // e1 a, e1 b, ...).
  auto jobs = Claim(t, kT0, 4);
  REQUIRE(jobs.size() == 4);
  for (const ClaimedJob& j : jobs) {
    if (j.event.event_id == "e1" && j.handler == "b") {
      REQUIRE(t->FinishJob(j, Done(kT0 + 1s)).ok());
      continue;
    }
    JobOutcome o;
    o.outcome = Outcome::kPermanent;
    o.detail = "exit 65; output: no " + j.handler;
    o.next = JobOutcome::Next::kDead;
    o.finished_at = kT0 + 1s;
    REQUIRE(t->FinishJob(j, o).ok());
  }
  const ListFilter ep = {.filter = {.endpoint = "ep"}, .limit = 2};
  CHECK(t->List(ep)->size() == 2);
  CHECK(*t->Count(ep) == 5);
  CHECK(*t->Count({.limit = 1}) == 6);
  CHECK(*t->Count({.filter = {.status = "dead"}}) == 2);
  CHECK(*t->Count({.filter = {.status = "nope", .handler = "a"}}) == 0);

  auto dead_rows = t->List({.filter = {.status = "dead"}, .limit = 10});
  REQUIRE(dead_rows->size() == 2);
  std::vector<int64_t> ids;
  for (const InboxRow& r : *dead_rows) ids.push_back(r.id);
  ids.push_back(123456);  // no such row: nothing of it
  auto dead = t->DeadJobsOf(ids);
  REQUIRE(dead.ok());
  REQUIRE(dead->size() == 3);
  std::multiset<std::string> seen;
  for (const DeadJob& j : *dead) {
    const auto row = std::find_if(dead_rows->begin(), dead_rows->end(),
                                  [&](const InboxRow& r) { return r.id == j.row.id; });
    REQUIRE(row != dead_rows->end());
    seen.insert(row->event_id + " " + j.handler + " " + j.last_error);
    CHECK(j.attempts == 1);
  }
  CHECK(seen == std::multiset<std::string>{"e0 a exit 65; output: no a",
                                           "e0 b exit 65; output: no b",
                                           "e1 a exit 65; output: no a"});
  CHECK(t->DeadJobsOf({})->empty());
}

TEST_CASE("KnownHandlers: every handler with a job of any status or a state row") {
  TestInbox t;
  Accept(t, MakeEvent("e0", {"a", "b"}));
  Event other = MakeEvent("e1", {"a"});
  other.endpoint = "other";
  Accept(t, other);
  for (const ClaimedJob& j : Claim(t, kT0)) REQUIRE(t->FinishJob(j, Done(kT0 + 1s)).ok());
  REQUIRE(t->SetPaused({{"gone", "c"}}, true, "", kT0).ok());
  auto known = t->KnownHandlers();
  REQUIRE(known.ok());
  std::vector<std::string> names;
  for (const HandlerRef& h : *known) names.push_back(h.endpoint + "/" + h.handler);
  CHECK(names == std::vector<std::string>{"ep/a", "ep/b", "gone/c", "other/a"});
}
