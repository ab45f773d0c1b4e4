// The Inbox contract, Accept (event_store.h): an event stored once in one transaction, a duplicate
// counted on the original row, a body that differs under the same id refused (strict_body),
// a repeated body under a new id found (dedupe_body), the sequence gate, the group commit
// under concurrent accepts, and identity fields that are not UTF-8. Part of the storage
// contract suite: ctest runs this binary on SQLite (`inbox`) and on the throwaway PostgreSQL
// cluster (`inbox_postgres`); tests/inbox/contract.h has the helpers the suite shares.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "inbox/inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

TEST_CASE("accept stores once; duplicates are counted on the original row") {
  TestInbox t;
  CHECK(Accept(t, MakeEvent("a")) == Verdict::kAccepted);
  CHECK(Accept(t, MakeEvent("a")) == Verdict::kDuplicate);
  auto changed = t->Accept(MakeEvent("a", {"h"}, "", std::nullopt, "{\"other\":1}"));
  REQUIRE(changed.ok());
  CHECK(changed->verdict == Verdict::kDuplicate);
  CHECK(changed->body_changed);
  CHECK(t.Count("SELECT count(*) FROM inbox") == 1);
  CHECK(t.Count("SELECT duplicates FROM inbox") == 2);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 1);
}

TEST_CASE("strict_body: same id, other body is a Conflict and changes nothing") {
  TestInbox t;
  Event e = MakeEvent("a");
  e.strict_body = true;
  CHECK(Accept(t, e) == Verdict::kAccepted);
  Event other = MakeEvent("a", {"h"}, "", std::nullopt, "{\"x\":2}");
  other.strict_body = true;
  auto r = t->Accept(other);
  CHECK(r.status().code() == Status::Code::kConflict);
  CHECK(r.status().conflict() == Status::ConflictKind::kBodyDiffers);
  CHECK(t.Count("SELECT duplicates FROM inbox") == 0);
  CHECK(Accept(t, e) == Verdict::kDuplicate);  // the same body still is a duplicate
}

TEST_CASE("dedupe body: a new id with a stored body is the stored event's duplicate") {
  TestInbox t;
  auto with_body_dedupe = [](Event e) {
    e.dedupe_body = true;
    return e;
  };
  const std::string body = R"({"action":"opened"})";
  auto first = t->Accept(with_body_dedupe(MakeEvent("d-1", {"h1", "h2"}, "", std::nullopt, body)));
  REQUIRE(first.ok());
  CHECK(first->verdict == Verdict::kAccepted);
  CHECK(first->duplicate_of.empty());

  // The same body under fresh ids: duplicates of d-1, counted there, nothing stored.
  for (const char* fresh : {"d-2", "d-3"}) {
    auto r = t->Accept(with_body_dedupe(MakeEvent(fresh, {"h1", "h2"}, "", std::nullopt, body)));
    REQUIRE(r.ok());
    CHECK(r->verdict == Verdict::kDuplicate);
    CHECK(r->duplicate_of == "d-1");
    CHECK_FALSE(r->body_changed);
  }
  // Also with a resource and a lower sequence: a duplicate is never stale, and moves no gate.
  auto gated = t->Accept(with_body_dedupe(MakeEvent("d-4", {"h1"}, "r", 1, body)));
  REQUIRE(gated.ok());
  CHECK(gated->verdict == Verdict::kDuplicate);
  CHECK(gated->duplicate_of == "d-1");
  CHECK(t.Count("SELECT count(*) FROM inbox") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 2);
  CHECK(t.Count("SELECT duplicates FROM inbox WHERE event_id = 'd-1'") == 3);
  CHECK(t.Count("SELECT count(*) FROM sequences") == 0);

  // A stored id is a duplicate by id (no duplicate_of), even when its body matches.
  auto by_id = t->Accept(with_body_dedupe(MakeEvent("d-1", {"h1", "h2"}, "", std::nullopt, body)));
  REQUIRE(by_id.ok());
  CHECK(by_id->verdict == Verdict::kDuplicate);
  CHECK(by_id->duplicate_of.empty());
  CHECK(t.Count("SELECT duplicates FROM inbox WHERE event_id = 'd-1'") == 4);

  // Another body is a new event; another endpoint's identical body is not looked at.
  CHECK(Accept(t, with_body_dedupe(MakeEvent("d-5", {"h1"}, "", std::nullopt, "{}"))) ==
        Verdict::kAccepted);
  Event elsewhere = with_body_dedupe(MakeEvent("d-6", {"h1"}, "", std::nullopt, body));
  elsewhere.endpoint = "other";
  CHECK(Accept(t, elsewhere) == Verdict::kAccepted);

  // Without dedupe_body (the default, dedupe: [id]) the body is not a key.
  CHECK(Accept(t, MakeEvent("d-7", {"h1"}, "", std::nullopt, body)) == Verdict::kAccepted);

  // Within retention only: once the stored rows are gone, the body is new again.
  REQUIRE(t->Clear("ep", "d-1", kT0).ok());
  REQUIRE(t->Clear("ep", "d-7", kT0).ok());
  CHECK(Accept(t, with_body_dedupe(MakeEvent("d-8", {"h1"}, "", std::nullopt, body))) ==
        Verdict::kAccepted);
}

TEST_CASE("sequence gate: lower is stale with no jobs, equal is accepted") {
  TestInbox t;
  CHECK(Accept(t, MakeEvent("e5", {"h"}, "r", 5)) == Verdict::kAccepted);
  CHECK(Accept(t, MakeEvent("e3", {"h"}, "r", 3)) == Verdict::kStale);
  CHECK(Accept(t, MakeEvent("e5b", {"h"}, "r", 5)) == Verdict::kAccepted);
  CHECK(Accept(t, MakeEvent("o1", {"h"}, "other", 1)) == Verdict::kAccepted);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'stale'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 3);
  CHECK(t.Count("SELECT last_sequence FROM sequences WHERE resource_id = 'r'") == 5);
}

TEST_CASE("no handlers: stored as ignored, with no jobs") {
  TestInbox t;
  CHECK(Accept(t, MakeEvent("i", {})) == Verdict::kIgnored);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'ignored'") == 1);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 0);
}

TEST_CASE("group commit: concurrent accepts of distinct and repeated ids") {
  TestInbox t;
  constexpr int kThreads = 16, kEach = 40;
  std::atomic<int> accepted{0}, duplicate{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kEach; ++n) {
        // Every id is sent by two threads.
        auto r = t->Accept(MakeEvent("id-" + std::to_string((i / 2) * kEach + n)));
        if (!r.ok()) continue;
        if (r->verdict == Verdict::kAccepted) ++accepted;
        if (r->verdict == Verdict::kDuplicate) ++duplicate;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(accepted == kThreads * kEach / 2);
  CHECK(duplicate == kThreads * kEach / 2);
  CHECK(t.Count("SELECT count(*) FROM inbox") == kThreads * kEach / 2);
  CHECK(t.Count("SELECT count(*) FROM jobs") == kThreads * kEach / 2);
}

TEST_CASE("identity fields that are not UTF-8: PostgreSQL refuses them as InvalidArgument") {
  TestInbox t;
  Event e = MakeEvent("bad-\xff\xfe-id");
  auto r = t->Accept(e);
  if (OnPostgres()) {
    CHECK(r.status().code() == Status::Code::kInvalidArgument);  // answered 400
    CHECK(t.Count("SELECT count(*) FROM inbox") == 0);
  } else {
    REQUIRE(r.ok());
    CHECK(r->verdict == Verdict::kAccepted);
  }
  Event binary = MakeEvent("binary-body");
  binary.body = std::string("\xff\x00\x01 any bytes", 13);
  REQUIRE(t->Accept(binary).ok());
  auto shown = t->Show("ep", "binary-body");
  REQUIRE(shown.ok());
  CHECK(shown->row.body == binary.body);
  auto claimed = Claim(t, kT0);
  REQUIRE(!claimed.empty());
  CHECK(claimed.back().event.body == binary.body);
}

TEST_CASE("group commit: one event the server refuses fails alone, its group is stored") {
  TestInbox t;
  // Groups form while a leader's statement runs: 16 threads keep the queue busy, and every
  // 25th event of thread 0 has an id PostgreSQL cannot store.
  constexpr int kThreads = 16, kEach = 50;
  std::atomic<int> accepted{0}, refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kEach; ++n) {
        const bool bad = i == 0 && n % 25 == 0;
        auto r = t->Accept(
            MakeEvent((bad ? "bad-\xff-" : "good-") + std::to_string(i) + "-" + std::to_string(n),
                      {"h1", "h2"}));
        if (r.ok() && r->verdict == Verdict::kAccepted)
          ++accepted;
        else if (!r.ok() && r.status().code() == Status::Code::kInvalidArgument)
          ++refused;
        else
          ++other;
      }
    });
  }
  for (auto& th : threads) th.join();
  const int bad = 2, good = kThreads * kEach - bad;
  CHECK(other == 0);
  if (OnPostgres()) {
    CHECK(refused == bad);
    CHECK(accepted == good);
  } else {
    CHECK(accepted == good + bad);  // SQLite stores any bytes
  }
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id LIKE 'good-%'") == good);
  // Each stored row has its two jobs, in handler order.
  CHECK(t.Count("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                " WHERE i.event_id LIKE 'good-%'") == 2 * good);
  CHECK(t.Count("SELECT count(*) FROM jobs a JOIN jobs b ON a.inbox_id = b.inbox_id"
                " AND a.handler = 'h1' AND b.handler = 'h2' AND a.id < b.id") ==
        (OnPostgres() ? good : good + bad));
}
