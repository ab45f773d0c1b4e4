// Tests of lease liveness's service (work/liveness.h) on a real inbox (a temporary SQLite
// file): the instance id, the heartbeat written at start and then on the thread, the release
// of an expired instance's leases before the first claim, a clean stop that ends this
// process's own leftover leases, and a heartbeat that fails in storage: recorded
// (ops/storage_health.h), tried again, never fatal. The inbox's own contract is
// tests/inbox/liveness_test.cc.
#include "work/liveness.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>

#include "inbox/inbox.h"
#include "ops/storage_health.h"
#include "tests/inbox/forwarding_inbox.h"

using namespace hookbox;
using namespace std::chrono_literals;

namespace {

// The real inbox, with heartbeats counted and, while `fail` is set, failing as a dead disk
// would.
class BeatingInbox final : public ForwardingInbox {
 public:
  using ForwardingInbox::ForwardingInbox;
  Status Heartbeat(const InstanceBeat& beat) override {
    ++beats;
    if (fail) return Status::Unavailable("heartbeat: disk I/O error");
    return in_.Heartbeat(beat);
  }
  std::atomic<int> beats{0};
  std::atomic<bool> fail{false};
};

struct Setup {
  Setup() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-live-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    auto opened = OpenInbox({dir + "/inbox.db", /*durable=*/false, /*create=*/true});
    REQUIRE(opened.ok());
    real = std::move(*opened);
    inbox = std::make_unique<BeatingInbox>(*real);
  }
  ~Setup() {
    inbox.reset();
    real.reset();
    std::filesystem::remove_all(dir);
  }

  // Accepts event `id` (one job) and claims it for `owner` with a 10 min lease.
  void AcceptAndClaim(const std::string& id, const std::string& owner) {
    Event e;
    e.endpoint = "ep";
    e.event_id = id;
    e.id_source = "header:X-Id";
    e.body = "{}";
    e.body_sha256 = "sha";
    e.headers_json = "{}";
    e.handlers = {"h"};
    e.received_at = clock.Now();
    REQUIRE(real->Accept(e).ok());
    auto claimed = real->ClaimJobs(owner, 1, clock.Now(), 600s);
    REQUIRE(claimed.ok());
    REQUIRE(claimed->size() == 1);
  }
  size_t Claimable() {
    auto claimed = real->ClaimJobs("test-worker", 10, clock.Now(), 60s);
    REQUIRE(claimed.ok());
    return claimed->size();
  }

  std::string dir;
  std::unique_ptr<Inbox> real;
  std::unique_ptr<BeatingInbox> inbox;
  SystemClock clock;
};

template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

}  // namespace

TEST_CASE("liveness: the instance id is 32 hex characters, the owners' prefix, once a process") {
  const std::string& id = InstanceId();
  CHECK(id.size() == 32);
  CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(LeaseOwnerPrefix() == id + ":");
  CHECK(&InstanceId() == &id);
  CHECK(InstanceLiveness::IntervalFor(30s) == 5s);
}

TEST_CASE("liveness: start beats and ends expired leases at once; a clean stop ends its own") {
  Setup s;
  // A process that died: its last beat 10 s ago, expired after 1 s; its job's lease has
  // 10 min left.
  const std::string dead = "deaddeaddeaddeaddeaddeaddeaddead";
  REQUIRE(s.real->Heartbeat({dead, "elsewhere", 7, s.clock.Now() - 10s, 1s}).ok());
  s.AcceptAndClaim("theirs", dead + ":dispatcher");
  s.AcceptAndClaim("mine", LeaseOwnerPrefix() + "dispatcher");

  InstanceLiveness live(*s.inbox, s.clock, 1s);
  live.Start();
  CHECK(s.inbox->beats >= 1);
  CHECK(s.Claimable() == 1);  // the dead one's job, before any beat of the thread
  CHECK(Eventually([&] { return s.inbox->beats >= 3; }));  // the thread beats on
  CHECK(s.Claimable() == 0);                               // this process's own lease stands
  live.Stop();
  CHECK(s.Claimable() == 1);  // ended by the clean stop
  const int beats = s.inbox->beats;
  std::this_thread::sleep_for(400ms);  // more than two intervals: the thread is gone
  CHECK(s.inbox->beats == beats);
  live.Stop();  // twice: nothing more
}

TEST_CASE("liveness: a heartbeat that fails is recorded and tried again, never fatal") {
  Setup s;
  s.inbox->fail = true;
  InstanceLiveness live(*s.inbox, s.clock, 1s);
  live.Start();  // does not throw or exit
  CHECK(!live.Beat().ok());
  // Three failures in a row make storage unready, naming the heartbeat.
  CHECK(Eventually([&] { return Storage().Problem().find("heartbeat") != std::string::npos; }));
  s.inbox->fail = false;
  CHECK(Eventually([&] { return Storage().Problem().empty(); }));
  CHECK(live.Beat().ok());
  live.Stop();
}
