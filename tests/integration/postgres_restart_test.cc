// PostgreSQL restarted under load, end to end (replicas.h): two replicas on a cluster of
// their own, senders that go on through the restart; 503 while the database is down and
// no 200 without it, every 200 stored, the producer's retries accepted, and every event
// processed exactly once once the leases cut off by the restart run out. Its own file, so
// that ctest runs it beside postgres_test.cc's cases: most of its time is that wait.
#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/integration/replicas.h"

using hookbox::pgtest::Endpoint;
using hookbox::pgtest::ReadyStatus;
using hookbox::pgtest::Replicas;
using hookbox::pgtest::Sql;
using hookbox::testing::AnswerLine;
using hookbox::testing::Eventually;
using nlohmann::json;
using namespace std::chrono_literals;

TEST_CASE("PostgreSQL restarted under load: 503 while down, no 200 lost, recovery", "[.postgres]") {
  const hookbox::pgtest::OwnCluster cluster;  // the shared one serves other tests meanwhile
  Replicas r(Endpoint("open", Sql("CREATE TABLE IF NOT EXISTS effects (event_id text NOT NULL)",
                                  "INSERT INTO effects VALUES (:event_id)")),
             2, cluster.state());
  std::mutex mu;
  std::map<std::string, std::string> answers;  // event id -> last answer
  std::map<std::string, int> by_answer;
  std::atomic<bool> stop{false};
  std::atomic<int> next{0};
  std::vector<std::thread> senders;
  for (int s = 0; s < 2; ++s) {
    senders.emplace_back([&, s] {
      while (!stop) {
        const std::string id = "load-" + std::to_string(next++);
        std::string answer = AnswerLine(r[s].Post("/hooks/open", {}, R"({"id":")" + id + R"("})"));
        {
          std::lock_guard lock(mu);
          answers[id] = answer;
          ++by_answer[answer];
        }
        std::this_thread::sleep_for(5ms);
      }
    });
  }
  std::this_thread::sleep_for(1s);
  REQUIRE(hookbox::pgtest::ClusterCommand("server-stop", cluster.state()));
  std::this_thread::sleep_for(1500ms);
  CHECK(ReadyStatus(r.a) == 503);
  CHECK(ReadyStatus(r.b) == 503);
  int accepted_while_down;
  {
    std::lock_guard lock(mu);
    accepted_while_down = by_answer["200 accepted"];
  }
  std::this_thread::sleep_for(500ms);
  {
    std::lock_guard lock(mu);
    CHECK(by_answer["200 accepted"] == accepted_while_down);  // no 200 without a database
  }
  REQUIRE(hookbox::pgtest::ClusterCommand("server-start", cluster.state()));
  CHECK(Eventually([&] { return ReadyStatus(r.a) == 200 && ReadyStatus(r.b) == 200; }, 20s));
  std::this_thread::sleep_for(1s);  // load goes on after recovery, without a hookbox restart
  stop = true;
  for (auto& t : senders) t.join();

  std::map<std::string, int> counts;
  std::vector<std::string> accepted, refused;
  for (const auto& [id, answer] : answers) {
    ++counts[answer];
    if (answer == "200 accepted")
      accepted.push_back(id);
    else
      refused.push_back(id);
  }
  INFO("answers: " << json(counts).dump());
  CHECK(counts["503 storage unavailable"] > 0);
  CHECK(counts["200 accepted"] + counts["503 storage unavailable"] ==
        static_cast<int>(answers.size()));  // nothing else: no 500, no lost request
  // Every 200 is in the inbox.
  std::string stored = r.db.Query("SELECT event_id FROM inbox");
  std::set<std::string> stored_ids;
  std::istringstream lines(stored);
  for (std::string line; std::getline(lines, line);) stored_ids.insert(line);
  for (const std::string& id : accepted) {
    INFO(id);
    CHECK(stored_ids.count(id) == 1);
  }
  // Recovery: the producer's retries of the 503s are accepted (or were stored after all).
  for (const std::string& id : refused) {
    std::string again = AnswerLine(r.a.Post("/hooks/open", {}, R"({"id":")" + id + R"("})"));
    INFO(id);
    CHECK((again == "200 accepted" || again == "200 duplicate"));
  }
  // A job whose claim or finish was cut off by the restart runs again when its lease (the
  // sql kind's 30 s timeout + 30 s) ends.
  const int64_t total = static_cast<int64_t>(answers.size());
  REQUIRE(Eventually(
      [&] { return r.Count("SELECT count(*) FROM inbox WHERE status = 'processed'") == total; },
      90s));
  CHECK(r.Count("SELECT count(*) FROM effects") == total);
  CHECK(r.Count("SELECT count(DISTINCT event_id) FROM effects") == total);
}
