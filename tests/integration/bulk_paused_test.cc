// A bulk verb's --rate beside a paused handler (README, "Bulk retry and replay"), through
// the real daemon and CLI: the plan names each handler's state and the drain time; a --rate
// spread of a paused handler's jobs is refused with the choices, nothing changed (the spread
// would run out during the pause and every job run at once on resume), and a dry run shows
// it; once resumed the retry acts, and a local downstream that notes when each request
// arrives sees them at the rate, not all at once.
#include <httplib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "daemon.h"

using hookbox::testing::Daemon;
using hookbox::testing::Eventually;
using hookbox::testing::LoopbackServer;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

// The service behind handler `record`: refuses every request (400: the job dies at once)
// until fixed, then answers 200 and notes when each request arrived.
class Downstream {
 public:
  int port() const { return server_.port(); }
  void Fix() {
    std::lock_guard lock(mu_);
    fixed_ = true;
  }
  std::vector<std::chrono::steady_clock::time_point> arrivals() {
    std::lock_guard lock(mu_);
    return arrivals_;
  }

 private:
  std::mutex mu_;
  bool fixed_ = false;
  std::vector<std::chrono::steady_clock::time_point> arrivals_;
  LoopbackServer server_{[this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mu_);
    if (!fixed_) {
      res.status = 400;
      return;
    }
    res.status = 200;
    arrivals_.push_back(std::chrono::steady_clock::now());
  }};  // last: it serves until destroyed first, while the state above still lives
};

std::string Config(int downstream_port) {
  return R"(
listen: 127.0.0.1:0
admin_listen: ""
database: "{DB}"
workers: 4
endpoints:
  - name: ep
    path: /hooks/ep
    verify: none
    event_id: body:/id
    routes:
      - events: ["*"]
        handlers:
          - name: record
            http: {url: "http://127.0.0.1:)" +
         std::to_string(downstream_port) + R"(/", concurrency: 8}
)";
}

// The most requests that arrived within any one second.
size_t MostInOneSecond(std::vector<std::chrono::steady_clock::time_point> times) {
  std::sort(times.begin(), times.end());
  size_t most = 0;
  for (size_t first = 0, last = 0; last < times.size(); ++last) {
    while (times[last] - times[first] >= std::chrono::seconds(1)) ++first;
    most = std::max(most, last - first + 1);
  }
  return most;
}

int Dead(const Daemon& d) {
  int n = 0;
  for (const json& row : d.Rows()) n += row["status"] == "dead";
  return n;
}

}  // namespace

TEST_CASE("bulk retry --rate refuses a paused handler's spread; the plan says state and drain") {
  TempDir dir;
  Downstream downstream;
  Daemon d(dir, Config(downstream.port()));
  for (int i = 0; i < 30; ++i) {
    auto r = d.Post("/hooks/ep", {}, R"({"id":"e)" + std::to_string(i) + R"(","type":"t"})");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  REQUIRE(Eventually([&] { return Dead(d) == 30; }));
  REQUIRE(d.Cli({"handler", "pause", "ep/record", "--reason", "downstream down"}).exit_code == 0);
  downstream.Fix();

  const std::vector<std::string> retry = {"inbox", "retry",  "--dead", "--endpoint",
                                          "ep",    "--rate", "10/s",   "--yes"};
  auto refused = d.Cli(retry);
  CHECK(refused.exit_code == 2);
  CHECK(refused.out.find("  handler state      ep/record paused (downstream down)\n") !=
        std::string::npos);
  CHECK(refused.out.find("  drain time         about 3 s (30 jobs") != std::string::npos);
  CHECK(refused.err.find("ep/record is paused") != std::string::npos);
  CHECK(refused.err.find("hookbox handler resume ep/record") != std::string::npos);
  CHECK(refused.err.find("nothing changed") != std::string::npos);
  CHECK(Dead(d) == 30);
  // With --json the refusal is the object's `refused`, beside the plan's handler states.
  auto json_refused =
      d.Cli({"inbox", "retry", "--dead", "--endpoint", "ep", "--rate", "10/s", "--yes", "--json"});
  CHECK(json_refused.exit_code == 2);
  const json answer = json::parse(json_refused.out);
  CHECK(answer["rearmed"] == 0);
  CHECK(answer["refused"].get<std::string>().find("ep/record is paused") != std::string::npos);
  CHECK(answer["handlers"][0]["handler"] == "ep/record");
  CHECK(answer["handlers"][0]["state"] == "paused");
  CHECK(answer["handlers"][0]["reason"] == "downstream down");
  CHECK(answer["handlers"][0]["jobs"] == 30);
  CHECK(answer["drain_seconds"] == 3);
  CHECK(Dead(d) == 30);
  auto dry = d.Cli({"inbox", "retry", "--dead", "--endpoint", "ep", "--rate", "10/s", "--dry-run"});
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("paused (downstream down)") != std::string::npos);

  // Resumed first, the spread holds from the act on: the plan says so and it acts.
  REQUIRE(d.Cli({"handler", "resume", "ep/record"}).exit_code == 0);
  const auto acted = std::chrono::steady_clock::now();
  auto run = d.Cli(retry);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("  handler state      ep/record running\n") != std::string::npos);
  CHECK(run.out.find("re-armed 30 job(s)") != std::string::npos);
  REQUIRE(Eventually([&] { return downstream.arrivals().size() == 30; }));
  CHECK(Dead(d) == 0);

  // The pace held: the 30th job was due 2.9 s after the act, so the last request cannot
  // come sooner (the due times are the bound, not this machine's speed); and no second saw
  // a flood (all 30 at once is what the refused order would have done on resume). 20 leaves
  // room for a worker that stalls and then claims the jobs that came due meanwhile.
  const auto arrivals = downstream.arrivals();
  CHECK(*std::max_element(arrivals.begin(), arrivals.end()) - acted >=
        std::chrono::milliseconds(2900));
  CHECK(MostInOneSecond(arrivals) <= 20);
}
