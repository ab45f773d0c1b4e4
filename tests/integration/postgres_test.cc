// End-to-end tests of the PostgreSQL backend: two real `hookbox serve` processes (replicas)
// on one database of the throwaway cluster ctest starts (tests/pg/cluster.sh), real HTTP,
// real handler processes, and counts of side effects (lines an exec handler appended, rows a
// sql handler inserted). Tagged [.postgres]: hidden from the plain `integration` run, run
// by `integration_postgres`, which requires the cluster fixture.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "tests/integration/replicas.h"

using hookbox::pgtest::Endpoint;
using hookbox::pgtest::Exec;
using hookbox::pgtest::ReadyStatus;
using hookbox::pgtest::Recorder;
using hookbox::pgtest::ReplicaConfig;
using hookbox::pgtest::Replicas;
using hookbox::pgtest::Sql;
using hookbox::pgtest::TestDatabase;
using hookbox::testing::AnswerLine;
using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::ReadLines;
using hookbox::testing::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

TEST_CASE("replicas: the same event posted to both at once is accepted once, run once",
          "[.postgres]") {
  Replicas r(Endpoint("open", Exec(Recorder("runs"))));
  constexpr int kEvents = 25;
  std::map<std::string, int> verdicts;
  for (int n = 0; n < kEvents; ++n) {
    const std::string body = R"({"id":"same-)" + std::to_string(n) + R"("})";
    std::atomic<int> ready{0};
    std::string answers[2];
    std::thread posts[2];
    for (int i = 0; i < 2; ++i) {
      posts[i] = std::thread([&, i] {
        ++ready;
        while (ready < 2) {
        }
        answers[i] = AnswerLine(r[i].Post("/hooks/open", {}, body));
      });
    }
    for (auto& p : posts) p.join();
    std::vector<std::string> pair = {answers[0], answers[1]};
    std::sort(pair.begin(), pair.end());
    INFO(body);
    CHECK(pair == std::vector<std::string>{"200 accepted", "200 duplicate"});
  }
  REQUIRE(Eventually(
      [&] { return r.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == kEvents; }));
  std::this_thread::sleep_for(300ms);
  auto runs = ReadLines(r.shared / "runs");
  CHECK(runs.size() == static_cast<size_t>(kEvents));
  std::set<std::string> ids;
  for (const std::string& line : runs) ids.insert(line.substr(0, line.find(' ')));
  CHECK(ids.size() == static_cast<size_t>(kEvents));
  CHECK(r.Count("SELECT sum(duplicates) FROM inbox") == kEvents);
}

TEST_CASE("replicas: 1,000 events spread over both are each processed exactly once",
          "[.postgres]") {
  Replicas r(Endpoint(
      "open",
      Exec(Recorder("runs")) +
          Sql("CREATE TABLE IF NOT EXISTS effects (event_id text NOT NULL, amount integer)",
              "INSERT INTO effects VALUES (:event_id, (:body::jsonb->>'amount')::integer)")));
  constexpr int kEvents = 1000, kSenders = 4;
  std::atomic<int> next{0}, ok{0};
  std::vector<std::thread> senders;
  const auto started = std::chrono::steady_clock::now();
  for (int s = 0; s < kSenders; ++s) {
    senders.emplace_back([&] {
      for (int n; (n = next++) < kEvents;) {
        json body = {{"id", "evt-" + std::to_string(n)}, {"amount", n}};
        if (AnswerLine(r[n].Post("/hooks/open", {}, body.dump())) == "200 accepted") ++ok;
      }
    });
  }
  for (auto& t : senders) t.join();
  CHECK(ok == kEvents);
  REQUIRE(Eventually(
      [&] { return r.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == kEvents; },
      120s));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  WARN("1,000 events accepted and processed by two replicas in " << seconds << " s");
  CHECK(r.Count("SELECT count(*) FROM effects") == kEvents);
  CHECK(r.Count("SELECT count(DISTINCT event_id) FROM effects") == kEvents);
  CHECK(r.Count("SELECT sum(amount) FROM effects") == kEvents * (kEvents - 1) / 2);
  auto runs = ReadLines(r.shared / "runs");
  CHECK(runs.size() == static_cast<size_t>(kEvents));
  std::set<std::string> ids, pids;
  for (const std::string& line : runs) {
    ids.insert(line.substr(0, line.find(' ')));
    pids.insert(line.substr(line.find(' ') + 1));
  }
  CHECK(ids.size() == static_cast<size_t>(kEvents));
  CHECK(pids.size() == 2);  // both replicas' workers took part
  CHECK(r.Count("SELECT count(*) FROM attempts WHERE outcome <> 'ok'") == 0);
}

TEST_CASE("replicas: one resource's jobs run in sequence order, never two at once", "[.postgres]") {
  Replicas r(
      Endpoint("open",
               Exec("[/bin/sh, -c, 'echo \"start $HOOKBOX_SEQUENCE\" >> {SHARED}/log; sleep 0.02;"
                    " echo \"end $HOOKBOX_SEQUENCE\" >> {SHARED}/log']"),
               "    resource: body:/object\n    sequence: body:/seq\n"));
  std::vector<int> seqs(40);
  for (int i = 0; i < 40; ++i) seqs[i] = i + 1;
  std::shuffle(seqs.begin(), seqs.end(), std::mt19937(3));
  std::vector<std::thread> senders;
  for (int half = 0; half < 2; ++half) {
    senders.emplace_back([&, half] {
      for (int i = half; i < 40; i += 2) {
        json body = {{"id", "e" + std::to_string(seqs[i])}, {"object", "obj-1"}, {"seq", seqs[i]}};
        r[half].Post("/hooks/open", {}, body.dump());
      }
    });
  }
  for (auto& t : senders) t.join();
  REQUIRE(Eventually([&] {
    return r.Count("SELECT count(*) FROM inbox WHERE status IN ('processed', 'stale')") == 40;
  }));
  const int64_t processed = r.Count("SELECT count(*) FROM inbox WHERE status = 'processed'");
  auto log = ReadLines(r.shared / "log");
  REQUIRE(log.size() == 2 * static_cast<size_t>(processed));
  int last = 0;
  for (size_t i = 0; i < log.size(); i += 2) {
    int seq = std::stoi(log[i].substr(6));
    CHECK(log[i] == "start " + std::to_string(seq));
    CHECK(log[i + 1] == "end " + std::to_string(seq));  // no other start in between
    CHECK(seq > last);
    last = seq;
  }
  CHECK(last == 40);
}

TEST_CASE("replicas: a sync sql endpoint hit on both at once commits one row", "[.postgres]") {
  Replicas r(
      Endpoint("pay",
               Sql("CREATE TABLE IF NOT EXISTS ledger (event_id text PRIMARY KEY,"
                   " amount integer NOT NULL CHECK (amount > 0))",
                   "INSERT INTO ledger VALUES (:event_id, (:body::jsonb->>'amount')::integer)"),
               "    mode: sync\n"));
  const std::string body = R"({"id":"pay-1","amount":42})";
  std::atomic<int> accepted{0}, duplicate{0}, other{0};
  std::vector<std::thread> senders;
  for (int i = 0; i < 16; ++i) {
    senders.emplace_back([&, i] {
      std::string s = AnswerLine(r[i].Post("/hooks/pay", {}, body));
      if (s == "200 accepted")
        ++accepted;
      else if (s == "200 duplicate")
        ++duplicate;
      else
        ++other;
    });
  }
  for (auto& t : senders) t.join();
  CHECK(accepted == 1);
  CHECK(duplicate == 15);
  CHECK(other == 0);
  CHECK(r.db.Query("SELECT event_id, amount FROM ledger") == "pay-1|42\n");
  CHECK(r.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 1);
  // A failing statement (amount 0 breaks the CHECK) answers 500 and leaves no row at all.
  auto bad = r.b.Post("/hooks/pay", {}, R"({"id":"pay-2","amount":0})");
  REQUIRE(bad);
  CHECK(bad->status == 500);
  CHECK(r.Count("SELECT count(*) FROM inbox WHERE event_id = 'pay-2'") == 0);
}

TEST_CASE("replicas: a sync duplicate on the other replica waits on the first's row lock, then 200",
          "[.postgres]") {
  // The first run takes 2 s; the duplicate, sent to the other replica meanwhile, waits for
  // it (up to sync_wait) instead of running the handler a second time.
  Replicas r(
      Endpoint("sync", Exec(Recorder("runs", "sleep 2")), "    mode: sync\n    sync_wait: 8s\n"));
  std::string first;
  std::thread slow([&] { first = AnswerLine(r.a.Post("/hooks/sync", {}, R"({"id":"slow-1"})")); });
  REQUIRE(Eventually([&] { return ReadLines(r.shared / "runs").size() == 1; }, 10s));
  const auto sent = std::chrono::steady_clock::now();
  std::string second;
  std::thread duplicate(
      [&] { second = AnswerLine(r.b.Post("/hooks/sync", {}, R"({"id":"slow-1"})")); });
  // The wait is a real row lock: a server process of the shared database sits waiting for a
  // lock on the jobs rows the first replica holds (not a client polling the lease).
  CHECK(Eventually(
      [&] {
        return r.Count(
                   "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                   " AND query LIKE '%FROM jobs%FOR UPDATE%'") == 1;
      },
      5s));
  duplicate.join();
  CHECK(second == "200 duplicate");
  CHECK(std::chrono::steady_clock::now() - sent > 1s);  // it waited for the first
  slow.join();
  CHECK(first == "200 accepted");
  CHECK(ReadLines(r.shared / "runs").size() == 1);
  CHECK(r.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 1);
}

TEST_CASE("replicas: a sync duplicate whose wait on the lock runs out gets 409, no second run",
          "[.postgres]") {
  // A's run outlasts B's sync_wait: B's lock wait times out (lock_timeout) and B answers 409
  // while A still holds the lock and runs; A then finishes as the only run.
  Replicas r(Endpoint("sync", Exec(Recorder("runs", "sleep 4"), "10s"),
                      "    mode: sync\n    sync_wait: 1s\n"));
  std::string first;
  std::thread slow([&] { first = AnswerLine(r.a.Post("/hooks/sync", {}, R"({"id":"late-1"})")); });
  REQUIRE(Eventually([&] { return ReadLines(r.shared / "runs").size() == 1; }, 10s));
  auto second = r.b.Post("/hooks/sync", {}, R"({"id":"late-1"})");
  const int64_t processed_when_answered =
      r.Count("SELECT count(*) FROM inbox WHERE status = 'processed'");
  REQUIRE(second);
  CHECK(second->status == 409);
  CHECK(second->get_header_value("Retry-After") == "1");
  CHECK(processed_when_answered == 0);  // A was still running: B gave up, it did not wait
  slow.join();
  CHECK(first == "200 accepted");
  CHECK(ReadLines(r.shared / "runs").size() == 1);
  CHECK(r.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == 1);
}

TEST_CASE("replicas: the sync lock dies with its replica; the waiting duplicate gets 409",
          "[.postgres]") {
  // A runs a long sync handler and is killed while B's duplicate waits on A's row lock. The
  // server ends A's transaction with its connection, so B stops waiting on a lock at once;
  // A's lease still stands until its heartbeat expires (30 s: it may be a live replica cut
  // off from the database), so B does not run the handler itself: 409 with Retry-After when
  // sync_wait runs out.
  Replicas r(Endpoint("sync", Exec(Recorder("runs", "sleep 20"), "30s"),
                      "    mode: sync\n    sync_wait: 6s\n"));
  std::thread first([&] { (void)r.a.Post("/hooks/sync", {}, R"({"id":"held-1"})"); });
  REQUIRE(Eventually([&] { return ReadLines(r.shared / "runs").size() == 1; }, 10s));
  int second_status = 0;
  std::string retry_after;
  std::thread duplicate([&] {
    auto answer = r.b.Post("/hooks/sync", {}, R"({"id":"held-1"})");
    if (answer) {
      second_status = answer->status;
      retry_after = answer->get_header_value("Retry-After");
    }
  });
  const std::string waiting =
      "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
      " AND query LIKE '%FROM jobs%FOR UPDATE%'";
  REQUIRE(Eventually([&] { return r.Count(waiting) == 1; }, 5s));
  CHECK(r.a.Kill(SIGKILL) == 128 + SIGKILL);
  CHECK(Eventually([&] { return r.Count(waiting) == 0; }, 3s));  // no longer waits on a lock
  duplicate.join();
  first.join();
  CHECK(second_status == 409);
  CHECK(retry_after == "6");
  CHECK(ReadLines(r.shared / "runs").size() == 1);  // B did not run it while A's lease stands
  CHECK(r.Count("SELECT count(*) FROM jobs WHERE status = 'processing'") == 1);
}

TEST_CASE("a password in the PostgreSQL URL never reaches the log", "[.postgres]") {
  TempDir shared, dir;
  TestDatabase db;
  // The test cluster trusts local connections: the password is sent, never needed.
  Daemon d(dir, ReplicaConfig(shared, 1, Endpoint("p", Exec("[/bin/true]"))),
           db.url() + "&password=never-logged-7f3a");
  CHECK(AnswerLine(d.Post("/hooks/p", {}, R"({"id":"pw-1"})")) == "200 accepted");
  const std::string log = d.Log();
  CHECK(log.find("never-logged-7f3a") == std::string::npos);
  CHECK(log.find("password=***") != std::string::npos);
}

TEST_CASE("replicas: the CLI reads and changes the shared inbox", "[.postgres]") {
  Replicas r(Endpoint("open", Exec("[/bin/sh, -c, 'exit 65']")));
  CHECK(AnswerLine(r.a.Post("/hooks/open", {}, R"({"id":"cli-1","x":"\u00e9"})")) ==
        "200 accepted");
  CHECK(AnswerLine(r.b.Post("/hooks/open", {}, R"({"id":"cli-1","x":"\u00e9"})")) ==
        "200 duplicate");
  REQUIRE(
      Eventually([&] { return r.Count("SELECT count(*) FROM inbox WHERE status = 'dead'") == 1; }));
  auto rows = r.b.Rows();  // the other replica's CLI sees the same inbox
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["event_id"] == "cli-1");
  CHECK(rows[0]["duplicates"] == 1);
  auto show = r.a.Cli({"inbox", "show", "open", "cli-1", "--json"});
  REQUIRE(show.exit_code == 0);
  json detail = json::parse(show.out);
  CHECK(detail["body"] == R"({"id":"cli-1","x":"\u00e9"})");
  CHECK(detail["received_at"].get<std::string>().size() == 24);  // 2026-11-29T16:05:34.123Z
  CHECK(detail["jobs"][0]["attempts"][0]["outcome"] == "permanent");
  auto stats = r.a.Cli({"stats", "--json"});
  CHECK(stats.exit_code == 0);
  CHECK(json::parse(stats.out)["open"]["dead"] == 1);
  CHECK(r.a.Cli({"migrate"}).exit_code == 0);
  CHECK(r.a.Cli({"inbox", "retry", "open", "cli-1"}).exit_code == 0);
  CHECK(r.b.Cli({"inbox", "retry", "open", "nope"}).exit_code == 1);
  REQUIRE(
      Eventually([&] { return r.Count("SELECT count(*) FROM inbox WHERE status = 'dead'") == 1; }));
  CHECK(r.b.Cli({"inbox", "clear", "open", "cli-1"}).exit_code == 0);
  CHECK(r.Count("SELECT count(*) FROM jobs") == 0);
  CHECK(AnswerLine(r.b.Post("/hooks/open", {}, R"({"id":"cli-1"})")) == "200 accepted");

  // A database that cannot be reached is exit 2, and never created.
  TempDir other;
  hookbox::testing::WriteFile(other / "bad.yaml",
                              "database: \"" + hookbox::pgtest::UrlFor("hookbox_missing") +
                                  "\"\nendpoints:\n  - {name: e, path: /e, verify: none}\n");
  auto missing = hookbox::testing::RunHookbox({"inbox", "list", "-c", other / "bad.yaml"},
                                              other.path().string());
  CHECK(missing.exit_code == 2);
}

TEST_CASE("replicas: kill -9 one mid-job; the other finishes its jobs once its heartbeat expires",
          "[.postgres]") {
  // Each run takes 5 s, two at a time per replica; the lease is the handler timeout (6 s)
  // + 30 s; a replica's heartbeat expires 3 s after its last beat.
  const std::string endpoints = Endpoint("open", Exec(Recorder("runs", "sleep 5"), "6s", 2));
  TempDir shared, a_dir, b_dir;
  TestDatabase db;
  const std::string config = "heartbeat_timeout: 3s" + ReplicaConfig(shared, 2, endpoints);
  Daemon a(a_dir, config, db.url());
  constexpr int kEvents = 6;
  for (int n = 0; n < kEvents; ++n) {
    CHECK(AnswerLine(a.Post("/hooks/open", {}, R"({"id":"k)" + std::to_string(n) + R"("})")) ==
          "200 accepted");
  }
  // A holds two jobs; then B starts (while A lives and beats, so its leases stand) and A dies.
  REQUIRE(Eventually(
      [&] { return db.Count("SELECT count(*) FROM jobs WHERE status = 'processing'") == 2; }));
  Daemon b(b_dir, config, db.url());
  CHECK(a.Kill(SIGKILL) == 128 + SIGKILL);
  // B runs the four others, and A's two once A's heartbeat has expired: B ends their leases
  // (long before the 36 s they would have lasted) and runs them again.
  REQUIRE(Eventually(
      [&] { return db.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == kEvents; },
      60s));
  CHECK(b.LogCount("released the leases of an instance whose heartbeat expired") >= 1);
  // A's two attempts were abandoned.
  CHECK(db.Count("SELECT count(*) FROM attempts WHERE outcome IS NULL"
                 " AND detail LIKE 'abandoned%'") == 2);
  CHECK(db.Count("SELECT count(*) FROM attempts WHERE outcome = 'ok'") == kEvents);
  // Every event ran; A's two ran twice (once on the dead replica: at least once).
  auto runs = ReadLines(shared / "runs");
  std::set<std::string> ids;
  for (const std::string& line : runs) ids.insert(line.substr(0, line.find(' ')));
  CHECK(ids.size() == static_cast<size_t>(kEvents));
  CHECK(runs.size() == static_cast<size_t>(kEvents + 2));
}
