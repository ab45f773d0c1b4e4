// Tests of the dispatcher (work/dispatcher.h) on a real inbox: one claim takes as many due
// jobs as there are free slots, still one at a time per resource and in order; attempts
// that end together are finished in one FinishJobs batch; each handler runs at most its own
// `concurrency` attempts at once, whatever the others do. The inbox is a temporary SQLite
// file (HOOKBOX_TEST_DATABASE: a PostgreSQL URL instead), seen through a wrapper that only
// counts the calls and passes each on unchanged. The handlers are test handlers that record
// what ran, and when.
#include "work/dispatcher.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "inbox/inbox.h"
#include "tests/inbox/forwarding_inbox.h"

using namespace hookbox;
using namespace std::chrono_literals;

namespace {

// The real inbox, with its claim and finish calls counted (each call is one transaction).
class CountingInbox final : public ForwardingInbox {
 public:
  using ForwardingInbox::ForwardingInbox;

  std::vector<size_t> Claims() {
    std::lock_guard lock(mu_);
    return claims_;
  }
  std::vector<size_t> Finishes() {
    std::lock_guard lock(mu_);
    return finishes_;
  }

  using Inbox::ClaimJobs;
  StatusOr<std::vector<ClaimedJob>> ClaimJobs(const std::string& owner, int max, TimePoint now,
                                              std::chrono::milliseconds lease,
                                              const ClaimLimits& limits) override {
    auto r = in_.ClaimJobs(owner, max, now, lease, limits);
    std::lock_guard lock(mu_);
    if (r.ok() && !r->empty()) claims_.push_back(r->size());
    return r;
  }
  std::vector<StatusOr<Outcome>> FinishJobs(const std::vector<FinishRequest>& f) override {
    {
      std::lock_guard lock(mu_);
      finishes_.push_back(f.size());
    }
    return in_.FinishJobs(f);
  }

 private:
  std::mutex mu_;
  std::vector<size_t> claims_, finishes_;
};

// A handler run on the dispatcher's threads: records each event it ran, in order, and the
// most attempts it had running at once.
class RecordingHandler final : public Handler {
 public:
  RecordingHandler(int concurrency, std::chrono::milliseconds work)
      : concurrency_(concurrency), work_(work) {}

  HandlerResult Run(const HandlerEvent& event) override {
    {
      std::lock_guard lock(mu_);
      ran_.push_back(event.event_id);
      peak_ = std::max(peak_, ++running_);
    }
    std::this_thread::sleep_for(work_);
    std::lock_guard lock(mu_);
    --running_;
    return {};
  }
  std::chrono::milliseconds timeout() const override { return 10s; }
  int concurrency() const override { return concurrency_; }

  std::vector<std::string> Ran() {
    std::lock_guard lock(mu_);
    return ran_;
  }
  int Peak() {
    std::lock_guard lock(mu_);
    return peak_;
  }

 private:
  const int concurrency_;
  const std::chrono::milliseconds work_;
  std::mutex mu_;
  std::vector<std::string> ran_;
  int running_ = 0, peak_ = 0;
};

struct Setup {
  Setup() {
    if (const char* url = std::getenv("HOOKBOX_TEST_DATABASE"); url && *url) {
      database = url;
    } else {
      std::string tmpl =
          (std::filesystem::temp_directory_path() / "hookbox-dispatch-XXXXXX").string();
      dir = mkdtemp(tmpl.data());
      database = dir + "/inbox.db";
    }
    auto opened = OpenInbox({database, /*durable=*/false, /*create=*/true});
    INFO(opened.status().ToString());
    REQUIRE(opened.ok());
    real = std::move(*opened);
    counting = std::make_unique<CountingInbox>(*real);
  }
  ~Setup() {
    counting.reset();
    real.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }

  void AddHandler(const std::string& endpoint, const std::shared_ptr<RecordingHandler>& h) {
    Endpoint ep;
    ep.name = endpoint;
    config->endpoints.push_back(ep);
    handlers->by_endpoint[endpoint]["h"] = h;
    handlers->longest_timeout = std::max(handlers->longest_timeout, h->timeout());
    handlers->total_concurrency += h->concurrency();
  }

  // Accepts an event with one job for handler "h"; `resource` "" for no ordering.
  void Accept(const std::string& endpoint, const std::string& id, const std::string& resource = "",
              int64_t sequence = 0) {
    Event e;
    e.endpoint = endpoint;
    e.event_id = id + "-" + std::to_string(getpid());
    e.id_source = "header:X-Id";
    e.event_type = "thing.happened";
    e.resource_id = resource;
    if (!resource.empty()) {
      e.sequence = std::to_string(sequence);
      e.sequence_key = sequence;
    }
    e.body = "{}";
    e.body_sha256 = "sha";
    e.headers_json = "{}";
    e.handlers = {"h"};
    e.received_at = clock.Now();
    auto r = real->Accept(e);
    REQUIRE(r.ok());
    REQUIRE(r->verdict == Verdict::kAccepted);
  }

  // Waits (bounded) until no job is pending or processing.
  bool Drained() {
    for (int i = 0; i < 1000; ++i) {
      auto q = real->Queue(true);
      REQUIRE(q.ok());
      if (q->jobs_by_status["pending"] == 0 && q->jobs_by_status["processing"] == 0) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  std::string dir, database;
  std::unique_ptr<Inbox> real;
  std::unique_ptr<CountingInbox> counting;
  std::shared_ptr<Config> config = std::make_shared<Config>();
  std::shared_ptr<HandlerSet> handlers = std::make_shared<HandlerSet>();
  SystemClock clock;
};

}  // namespace

TEST_CASE("dispatcher: one claim takes every due head of its resource, order kept") {
  Setup t;
  auto h = std::make_shared<RecordingHandler>(/*concurrency=*/64, 20ms);
  t.AddHandler("ep", h);
  for (int i = 0; i < 20; ++i) t.Accept("ep", "free-" + std::to_string(i));
  for (const char* r : {"ra", "rb", "rc"}) {
    for (int seq = 1; seq <= 5; ++seq)
      t.Accept("ep", std::string(r) + "-" + std::to_string(seq), r, seq);
  }

  Dispatcher d(*t.counting, *t.counting, *t.counting, t.config, t.handlers, t.clock);
  d.Start(true);
  REQUIRE(t.Drained());
  REQUIRE(d.Stop(10s));

  // The first claim: the 20 unordered jobs and the first of each resource, in one call.
  const std::vector<size_t> claims = t.counting->Claims();
  REQUIRE_FALSE(claims.empty());
  CHECK(claims.front() == 23);
  for (size_t c : claims) CHECK(c <= static_cast<size_t>(Dispatcher::kMaxClaim));
  // Attempts that ended together were finished together: fewer finish calls than jobs.
  const std::vector<size_t> finishes = t.counting->Finishes();
  CHECK(*std::max_element(finishes.begin(), finishes.end()) > 1);
  size_t finished = 0;
  for (size_t f : finishes) finished += f;
  CHECK(finished == 35);
  CHECK(finishes.size() < 35);

  // Each job ran once; within a resource, in sequence order.
  const std::vector<std::string> ran = h->Ran();
  CHECK(ran.size() == 35);
  const std::string pid = "-" + std::to_string(getpid());
  for (const char* r : {"ra", "rb", "rc"}) {
    std::vector<std::string> order;
    for (const std::string& id : ran) {
      if (id.rfind(std::string(r) + "-", 0) == 0) order.push_back(id);
    }
    std::vector<std::string> expected;
    for (int seq = 1; seq <= 5; ++seq)
      expected.push_back(std::string(r) + "-" + std::to_string(seq) + pid);
    CHECK(order == expected);
  }
}

TEST_CASE("dispatcher: each handler runs at most its own concurrency, the others unbound by it") {
  Setup t;
  auto slow = std::make_shared<RecordingHandler>(/*concurrency=*/2, 100ms);
  auto fast = std::make_shared<RecordingHandler>(/*concurrency=*/8, 100ms);
  t.AddHandler("slow", slow);
  t.AddHandler("fast", fast);
  for (int i = 0; i < 12; ++i) {
    t.Accept("slow", "s" + std::to_string(i));
    t.Accept("fast", "f" + std::to_string(i));
  }
  Dispatcher d(*t.counting, *t.counting, *t.counting, t.config, t.handlers, t.clock);
  d.Start(true);
  REQUIRE(t.Drained());
  REQUIRE(d.Stop(10s));
  CHECK(slow->Ran().size() == 12);
  CHECK(fast->Ran().size() == 12);
  CHECK(slow->Peak() <= 2);
  CHECK(fast->Peak() <= 8);
  // The slow handler's two slots did not hold the fast one back to two at a time.
  CHECK(fast->Peak() > 2);
}

TEST_CASE("dispatcher: Stop waits for the attempts under way and records them") {
  Setup t;
  auto h = std::make_shared<RecordingHandler>(/*concurrency=*/4, 300ms);
  t.AddHandler("ep", h);
  for (int i = 0; i < 4; ++i) t.Accept("ep", "e" + std::to_string(i));
  Dispatcher d(*t.counting, *t.counting, *t.counting, t.config, t.handlers, t.clock);
  d.Start(true);
  for (int i = 0; i < 200 && h->Ran().size() < 4; ++i) std::this_thread::sleep_for(5ms);
  REQUIRE(h->Ran().size() == 4);
  CHECK(d.Stop(10s));
  auto q = t.real->Queue(true);
  REQUIRE(q.ok());
  CHECK(q->jobs_by_status["done"] == 4);
  CHECK(q->jobs_by_status["processing"] == 0);
}
