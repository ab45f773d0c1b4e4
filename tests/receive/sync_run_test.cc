// A sync endpoint's run (receive/receiver.cc, Receiver::RunSync) when the lease renewal
// before its second job, or the recording of its first job's result, fails: the 500 says
// "handler lost its lease" only when the inbox refused it as a lost lease
// (Status::ConflictKind::kLeaseLost); any other failure (Unavailable, Internal, a conflict of
// another kind) is storage's and reads "storage unavailable". After a failed renewal no later
// job runs. A real SQLite inbox, the failing call's answer chosen by the test.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"
#include "handlers/handler.h"
#include "inbox/inbox.h"
#include "ops/clock.h"
#include "receive/receiver.h"
#include "tests/inbox/forwarding_inbox.h"

using namespace hookbox;
using namespace std::chrono_literals;

namespace {

// The real inbox, except that RenewLeases answers `renewal_fails` and FinishJob
// `finish_fails` when they are failures.
class RenewalFails final : public ForwardingInbox {
 public:
  using ForwardingInbox::ForwardingInbox;

  Status renewal_fails;
  Status finish_fails;
  int renewals = 0;

  StatusOr<Outcome> FinishJob(const ClaimedJob& job, const JobOutcome& outcome,
                              const TransactionalWork* work,
                              const JobOutcome* work_failed) override {
    if (!finish_fails.ok()) return finish_fails;
    return in_.FinishJob(job, outcome, work, work_failed);
  }
  Status RenewLeases(std::span<const ClaimedJob> jobs, TimePoint now,
                     std::chrono::milliseconds lease) override {
    ++renewals;
    return renewal_fails.ok() ? in_.RenewLeases(jobs, now, lease) : renewal_fails;
  }
};

constexpr const char* kConfig = R"(
listen: 127.0.0.1:0
admin_listen: ""
database: {DB}
endpoints:
  - name: sync
    path: /hooks/sync
    verify: none
    event_id: body:/id
    mode: sync
    routes:
      - events: ["*"]
        handlers:
          - name: first
            exec: {command: [/bin/sh, -c, 'echo first >> {DIR}/ran']}
          - name: second
            exec: {command: [/bin/sh, -c, 'echo second >> {DIR}/ran']}
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

struct SyncSetup {
  SyncSetup() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-sync-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    const std::string text = Replace(Replace(kConfig, "{DB}", dir + "/inbox.db"), "{DIR}", dir);
    LoadResult loaded =
        LoadConfigText(text, "sync.yaml", {.host_checks = true, .kinds = &KindReaders()});
    INFO((loaded.errors.empty() ? std::string() : loaded.errors.front()));
    REQUIRE(loaded.config);
    config = std::make_shared<const Config>(std::move(*loaded.config));
    std::vector<std::string> errors;
    handlers = std::make_shared<const HandlerSet>(BuildHandlers(*config, &errors));
    REQUIRE(errors.empty());
    auto opened = OpenInbox({config->database, /*durable=*/false, /*create=*/true});
    INFO(opened.status().ToString());
    REQUIRE(opened.ok());
    real = std::move(*opened);
    inbox = std::make_unique<RenewalFails>(*real);
  }
  ~SyncSetup() {
    inbox.reset();
    real.reset();
    std::filesystem::remove_all(dir);
  }

  // One delivery of event `id`; the answer.
  Answer Deliver(const std::string& id) {
    Receiver receiver({config, handlers}, *inbox, *inbox, clock);
    Delivery d;
    d.method = "POST";
    d.path = "/hooks/sync";
    d.remote = "127.0.0.1:1";
    d.headers.emplace("Content-Type", "application/json");
    d.body = nlohmann::json{{"id", id}}.dump();
    return receiver.Receive(d);
  }

  // The handlers that ran, in order, one name a line.
  std::string Ran() const {
    std::string out;
    if (FILE* f = std::fopen((dir + "/ran").c_str(), "r")) {
      char buf[256];
      while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
      std::fclose(f);
    }
    return out;
  }

  std::string dir;
  std::shared_ptr<const Config> config;
  std::shared_ptr<const HandlerSet> handlers;
  std::unique_ptr<Inbox> real;
  std::unique_ptr<RenewalFails> inbox;
  SystemClock clock;
};

std::string ErrorOf(const Answer& a) {
  auto j = nlohmann::json::parse(a.body, nullptr, false);
  return j.is_object() ? j.value("error", "") : a.body;
}

}  // namespace

TEST_CASE("sync run: both jobs run and the answer is 200 when the renewal holds") {
  SyncSetup s;
  const Answer a = s.Deliver("ok-1");
  CHECK(a.status == 200);
  CHECK(s.inbox->renewals == 1);
  CHECK(s.Ran() == "first\nsecond\n");
}

TEST_CASE("sync run: a lost lease at the renewal is 500 'handler lost its lease'") {
  SyncSetup s;
  s.inbox->renewal_fails =
      Status::Conflict(Status::ConflictKind::kLeaseLost, "lease lost", "job 2");
  const Answer a = s.Deliver("lost-1");
  CHECK(a.status == 500);
  CHECK(ErrorOf(a) == "handler lost its lease");
  CHECK(s.Ran() == "first\n");
}

TEST_CASE("sync run: a storage failure at the renewal is 500 'storage unavailable'") {
  const Status failures[] = {
      Status::Unavailable("storage unavailable", "COMMIT: disk I/O error"),
      Status::Unavailable(Status::UnavailableKind::kBusy, "storage busy", "database is locked"),
      Status::Internal("storage error", "no such table: jobs"),
      Status::Conflict(Status::ConflictKind::kEventBusy, "event busy", "locked"),
  };
  for (const Status& failure : failures) {
    INFO(failure.ToString());
    SyncSetup s;
    s.inbox->renewal_fails = failure;
    const Answer a = s.Deliver("fault-1");
    CHECK(a.status == 500);
    CHECK(ErrorOf(a) == "storage unavailable");
    CHECK(s.Ran() == "first\n");
  }
}

TEST_CASE("sync run: a failed recording is 'handler lost its lease' only for a lost lease") {
  const std::pair<Status, const char*> cases[] = {
      {Status::Conflict(Status::ConflictKind::kLeaseLost, "lease lost", "job 1"),
       "handler lost its lease"},
      {Status::Unavailable("storage unavailable", "COMMIT: disk I/O error"), "storage unavailable"},
      {Status::Internal("storage error", "no such table: jobs"), "storage unavailable"},
  };
  for (const auto& [failure, error] : cases) {
    INFO(failure.ToString());
    SyncSetup s;
    s.inbox->finish_fails = failure;
    const Answer a = s.Deliver("finish-1");
    CHECK(a.status == 500);
    CHECK(ErrorOf(a) == error);
  }
}
