// The Inbox contract with several replicas on one database (DESIGN.md, "Concurrency"):
// concurrent accepts of one id, of one body and of one resource, and concurrent claims,
// each event stored and each job run exactly once. Part of the storage contract suite, on
// SQLite and PostgreSQL (tests/inbox/contract.h); and, on PostgreSQL, the resource locks'
// keys as another replica takes them.
#include <libpq-fe.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "inbox/inbox.h"
#include "tests/inbox/contract.h"

using namespace hookbox;
using namespace std::chrono_literals;

// --- several replicas on one database ------------------------------------------------------
// Two Inbox objects on one database behave as two hookbox processes (SQLite: two connections
// to one file; PostgreSQL: two pools, as two replicas have).

TEST_CASE("replicas: concurrent accepts of the same new id give exactly one accepted") {
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kIds = 60, kThreads = 8;
  std::atomic<int> accepted{0}, duplicate{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      // Every thread sends every id, in its own order: each id races 8 ways over 2 replicas.
      std::vector<int> ids(kIds);
      for (int n = 0; n < kIds; ++n) ids[n] = n;
      std::shuffle(ids.begin(), ids.end(), std::mt19937(i));
      for (int n : ids) {
        auto r = inboxes[i % 2]->Accept(MakeEvent("race-" + std::to_string(n), {"h1", "h2"}));
        if (!r.ok())
          ++failed;
        else if (r->verdict == Verdict::kAccepted)
          ++accepted;
        else if (r->verdict == Verdict::kDuplicate)
          ++duplicate;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(accepted == kIds);
  CHECK(duplicate == kIds * (kThreads - 1));
  CHECK(t.Count("SELECT count(*) FROM inbox") == kIds);
  CHECK(t.Count("SELECT count(*) FROM jobs") == 2 * kIds);
  CHECK(t.Count("SELECT sum(duplicates) FROM inbox") == kIds * (kThreads - 1));
}

TEST_CASE("replicas: concurrent identical bodies under distinct ids give one accepted") {
  // dedupe: [id, body], race-free: every thread sends every body under its own id, at
  // once, over two replicas (two processes' worth of connections on PostgreSQL).
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kBodies = 30, kThreads = 8;
  std::atomic<int> accepted{0}, duplicate{0}, failed{0}, wrong_original{0};
  std::mutex mu;
  std::map<int, std::string> accepted_id;  // body -> the id that was accepted
  std::vector<std::pair<int, std::string>> duplicates_of;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      std::vector<int> bodies(kBodies);
      for (int n = 0; n < kBodies; ++n) bodies[n] = n;
      std::shuffle(bodies.begin(), bodies.end(), std::mt19937(i));
      for (int n : bodies) {
        const std::string id = "b" + std::to_string(n) + "-t" + std::to_string(i);
        // Half the bodies have a resource (the transaction with the resource's lock).
        Event e = MakeEvent(id, {"h1", "h2"}, n % 2 ? "res-" + std::to_string(n) : "",
                            n % 2 ? std::optional<int64_t>(i) : std::nullopt,
                            "{\"body\":" + std::to_string(n) + "}");
        e.dedupe_body = true;
        auto r = inboxes[i % 2]->Accept(e);
        std::lock_guard lock(mu);
        if (!r.ok()) {
          ++failed;
        } else if (r->verdict == Verdict::kDuplicate) {
          ++duplicate;
          duplicates_of.emplace_back(n, r->duplicate_of);
        } else {
          // Accepted, or stale when a lower sequence of its resource came after a higher:
          // either way the one row stored for this body.
          ++accepted;
          accepted_id[n] = id;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(accepted == kBodies);
  CHECK(duplicate == kBodies * (kThreads - 1));
  for (const auto& [n, original] : duplicates_of) {
    if (accepted_id[n] != original) ++wrong_original;
  }
  CHECK(wrong_original == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox") == kBodies);
  CHECK(t.Count("SELECT sum(duplicates) FROM inbox") == kBodies * (kThreads - 1));
  CHECK(t.Count("SELECT count(*) FROM jobs") == 2 * kBodies);
}

TEST_CASE("replicas: concurrent accepts of one resource serialize on its sequence") {
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kEvents = 120, kThreads = 6;
  std::vector<int> seqs(kEvents);
  for (int i = 0; i < kEvents; ++i) seqs[i] = i + 1;
  std::shuffle(seqs.begin(), seqs.end(), std::mt19937(7));
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n; (n = next++) < kEvents;) {
        auto r =
            inboxes[i % 2]->Accept(MakeEvent("s" + std::to_string(seqs[n]), {"h"}, "R", seqs[n]));
        if (!r.ok()) ++failed;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failed == 0);
  CHECK(t.Count("SELECT count(*) FROM inbox") == kEvents);
  CHECK(t.Count("SELECT last_sequence FROM sequences WHERE resource_id = 'R'") == kEvents);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE sequence_key = " + std::to_string(kEvents) +
                " AND status = 'pending'") == 1);  // the newest is never stale
  // Accepted rows, in received (id) order, have ascending sequences: the order their jobs
  // run in is the sequence order. Stale rows have no jobs.
  CHECK(t.Count("SELECT count(*) FROM inbox a JOIN inbox b ON b.resource_id = a.resource_id"
                " AND b.id > a.id WHERE a.status <> 'stale' AND b.status <> 'stale'"
                " AND a.sequence_key > b.sequence_key") == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs j JOIN inbox i ON i.id = j.inbox_id"
                " WHERE i.status = 'stale'") == 0);
  CHECK(t.Count("SELECT count(*) FROM jobs") == t.Count("SELECT count(*) FROM inbox"
                                                        " WHERE status <> 'stale'"));
}

TEST_CASE("replicas: claiming at once, each job runs once, one per resource, in order") {
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kResources = 4, kPerResource = 8, kFree = 16;
  for (int n = 1; n <= kPerResource; ++n) {
    for (int r = 0; r < kResources; ++r) {
      std::string res = "R" + std::to_string(r);
      Accept(t, MakeEvent(res + "-" + std::to_string(n), {"h"}, res, n));
    }
  }
  for (int n = 0; n < kFree; ++n) Accept(t, MakeEvent("free-" + std::to_string(n)));
  constexpr int kJobs = kResources * kPerResource + kFree;

  std::mutex mu;
  std::set<std::string> held;                     // resources with a job running now
  std::map<std::string, std::vector<int>> order;  // resource -> sequences, as run
  std::map<int64_t, int> claims;                  // job -> times claimed
  int overlaps = 0;
  std::atomic<int> finished{0}, errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      Inbox& inbox = *inboxes[i % 2];
      const std::string owner = "replica" + std::to_string(i % 2) + ":w" + std::to_string(i);
      auto deadline = std::chrono::steady_clock::now() + 30s;
      while (finished < kJobs && std::chrono::steady_clock::now() < deadline) {
        auto c = inbox.ClaimJobs(owner, 1, kT0, 60s);
        if (!c.ok()) {
          ++errors;
          continue;
        }
        if (c->empty()) {
          std::this_thread::sleep_for(1ms);
          continue;
        }
        const ClaimedJob& job = c->front();
        const std::string& res = job.event.resource_id;
        {
          std::lock_guard lock(mu);
          ++claims[job.job_id];
          if (!res.empty()) {
            if (!held.insert(res).second) ++overlaps;
            order[res].push_back(std::stoi(job.event.sequence));
          }
        }
        std::this_thread::sleep_for(2ms);  // the handler runs
        {
          std::lock_guard lock(mu);
          if (!res.empty()) held.erase(res);
        }
        if (inbox.FinishJob(job, Done(kT0)).ok())
          ++finished;
        else
          ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(finished == kJobs);
  CHECK(overlaps == 0);
  CHECK(claims.size() == static_cast<size_t>(kJobs));
  for (const auto& [job, n] : claims) CHECK(n == 1);
  for (const auto& [res, seqs] : order) {
    INFO(res);
    CHECK(std::is_sorted(seqs.begin(), seqs.end()));
    CHECK(seqs.size() == static_cast<size_t>(kPerResource));
  }
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == kJobs);
}

TEST_CASE("replicas: batch claims of many-handler events never fail on each other") {
  TestInbox t;
  auto other = t.OpenAnother();
  Inbox* inboxes[] = {t.inbox.get(), other.get()};
  constexpr int kEvents = 40;
  for (int n = 0; n < kEvents; ++n) Accept(t, MakeEvent("m" + std::to_string(n), {"a", "b", "c"}));
  std::atomic<int> finished{0}, errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      Inbox& inbox = *inboxes[i % 2];
      auto deadline = std::chrono::steady_clock::now() + 30s;
      while (finished < 3 * kEvents && std::chrono::steady_clock::now() < deadline) {
        auto c = inbox.ClaimJobs("w" + std::to_string(i), 4, kT0, 60s);
        if (!c.ok()) {
          ++errors;
          continue;
        }
        // Finished in reverse, so transactions touch the same rows in different orders.
        for (auto it = c->rbegin(); it != c->rend(); ++it) {
          if (inbox.FinishJob(*it, Done(kT0)).ok())
            ++finished;
          else
            ++errors;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(finished == 3 * kEvents);
  CHECK(t.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == kEvents);
}

// PostgreSQL's resource locks are advisory locks that another replica's transaction holds
// (SQLite has one writer and no such locks): on a hash of "endpoint \x1f resource", seeded by
// purpose (accept 1, claim 2). A replica of another version takes the same keys: these pin
// them. The holder is a connection of the test's own, as another replica's would be.
TEST_CASE("replicas (PostgreSQL): a resource's lock held elsewhere holds its claim and accept") {
  TestInbox t;
  if (!OnPostgres()) return;  // no advisory locks on SQLite
  PGconn* other = PQconnectdb(t.pg->url().c_str());
  REQUIRE(PQstatus(other) == CONNECTION_OK);
  auto run = [&](const std::string& sql) {
    PGresult* r = PQexec(other, sql.c_str());
    const ExecStatusType st = PQresultStatus(r);
    PQclear(r);
    REQUIRE((st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK));
  };
  auto hold = [&](const std::string& resource, int seed) {
    run("BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('ep' || chr(31) || '" + resource +
        "', " + std::to_string(seed) + "))");
  };

  SECTION("the claim lock (seed 2): the resource's job is left, the rest is claimed") {
    Accept(t, MakeEvent("r1-1", {"h"}, "r1", 1));
    Accept(t, MakeEvent("free"));
    hold("r1", 2);
    auto first = Claim(t, kT0);
    REQUIRE(first.size() == 1);
    CHECK(first[0].event.event_id == "free");
    run("COMMIT");
    auto second = Claim(t, kT0);
    REQUIRE(second.size() == 1);
    CHECK(second[0].event.event_id == "r1-1");
  }
  SECTION("the accept lock (seed 1): an accept of the resource waits for it") {
    hold("r1", 1);
    std::atomic<bool> done{false}, accepted{false};
    std::thread accept([&] {
      accepted = t->Accept(MakeEvent("r1-1", {"h"}, "r1", 1)).ok();
      done = true;
    });
    std::this_thread::sleep_for(300ms);
    CHECK_FALSE(done);  // an accept not waiting for the lock takes milliseconds
    run("COMMIT");
    accept.join();
    CHECK(accepted);
    CHECK(t.Count("SELECT count(*) FROM inbox WHERE event_id = 'r1-1'") == 1);
  }
  PQfinish(other);
}

// Two replicas clearing one row at once (PostgreSQL: SQLite's one writer runs the two
// clears one after the other, and the second finds no row). The other replica's delete holds
// the row until it commits; this clear, which found the row before, waits for it and then
// deletes nothing: no such event, not "cleared".
TEST_CASE("replicas (PostgreSQL): a clear that another replica's clear overtakes finds no row") {
  TestInbox t;
  if (!OnPostgres()) return;
  Accept(t, MakeEvent("gone", {}));  // no handlers: no job for the clear's busy test to lock
  PGconn* other = PQconnectdb(t.pg->url().c_str());
  REQUIRE(PQstatus(other) == CONNECTION_OK);
  auto run = [&](const char* sql) {
    PGresult* r = PQexec(other, sql);
    const ExecStatusType st = PQresultStatus(r);
    PQclear(r);
    REQUIRE(st == PGRES_COMMAND_OK);
  };
  run("BEGIN; DELETE FROM inbox WHERE event_id = 'gone'");
  std::atomic<bool> done{false};
  Status cleared = Status::Internal("not run");
  std::thread clear([&] {
    cleared = t->Clear("ep", "gone", kT0 + 1s);
    done = true;
  });
  std::this_thread::sleep_for(300ms);
  CHECK_FALSE(done);  // waiting for the other delete's row lock
  run("COMMIT");
  clear.join();
  CHECK(cleared.code() == Status::Code::kNotFound);
  CHECK(t.Count("SELECT count(*) FROM inbox") == 0);
  PQfinish(other);
}
