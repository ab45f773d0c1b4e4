// Unit tests of the daily purge: the schedule in local time across midnight and both
// daylight-saving changes (TZ set per test, a fake clock, no sleeping), the retention
// cutoffs, and a purge run by the schedule on a real SQLite inbox removing exactly the rows
// past retention (and counting them in hookbox_purged_rows_total).
#include "work/purge.h"

#include <time.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "inbox/inbox.h"
#include "ops/daemon_metrics.h"

using namespace hookbox;
using namespace std::chrono_literals;

namespace {

// Sets TZ for the life of the object.
class ZoneScope {
 public:
  explicit ZoneScope(const char* zone) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    setenv("TZ", zone, 1);
    tzset();
  }
  ~ZoneScope() {
    if (old_)
      setenv("TZ", old_->c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }

 private:
  std::optional<std::string> old_;
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint t) : now_(t) {}
  TimePoint Now() const override { return now_; }
  void Set(TimePoint t) { now_ = t; }

 private:
  TimePoint now_;
};

TimePoint Utc(const std::string& rfc3339) {
  auto micros = ParseRfc3339Micros(rfc3339);
  REQUIRE(micros);
  return TimePoint(std::chrono::microseconds(*micros));
}

// The local date of t, "YYYY-MM-DD".
std::string LocalDate(TimePoint t) {
  time_t s = std::chrono::system_clock::to_time_t(t);
  tm lt{};
  localtime_r(&s, &lt);
  char buf[16];
  strftime(buf, sizeof buf, "%Y-%m-%d", &lt);
  return buf;
}

struct TestInbox {
  TestInbox() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hookbox-purge-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    auto opened = OpenInbox({dir + "/inbox.db", /*durable=*/false, /*create=*/true});
    REQUIRE(opened.ok());
    inbox = std::move(*opened);
  }
  ~TestInbox() {
    inbox.reset();
    std::filesystem::remove_all(dir);
  }
  std::string dir;
  std::unique_ptr<Inbox> inbox;
};

Event MakeEvent(const std::string& id, TimePoint received, std::vector<std::string> handlers = {},
                const std::string& resource = "", std::optional<int64_t> seq = std::nullopt) {
  Event e;
  e.endpoint = "ep";
  e.event_id = id;
  e.id_source = "header:X-Id";
  e.event_type = "thing.happened";
  e.resource_id = resource;
  e.sequence_key = seq;
  e.sequence = seq ? std::to_string(*seq) : "";
  e.body = "{}";
  e.body_sha256 = "sha";
  e.headers_json = "{}";
  e.handlers = std::move(handlers);
  e.received_at = received;
  return e;
}

std::shared_ptr<const Config> ConfigWith(const std::string& purge_at) {
  auto c = std::make_shared<Config>();
  c->purge_at = purge_at;
  c->retention = {7 * 24h, 30 * 24h, 90 * 24h};
  return c;
}

// Steps a fake clock from `from` to `to` in `step`s, ticking the schedule at each, and
// returns the local dates on which it purged (date -> runs).
std::map<std::string, int> RunsBetween(const std::string& purge_at, TimePoint from, TimePoint to,
                                       std::chrono::minutes step = 1min) {
  TestInbox t;
  FakeClock clock(from);
  PurgeSchedule schedule(*t.inbox, ConfigWith(purge_at), clock);
  std::map<std::string, int> runs;
  for (TimePoint now = from; now <= to; now += step) {
    clock.Set(now);
    if (auto result = schedule.Tick()) {
      REQUIRE(result->ok());
      ++runs[LocalDate(now)];
    }
  }
  return runs;
}

}  // namespace

TEST_CASE("purge_at parses as a 24-hour time of day") {
  auto at = ParseDailyTime("03:30");
  REQUIRE(at);
  CHECK(at->hour == 3);
  CHECK(at->minute == 30);
  CHECK(ParseDailyTime("00:00"));
  CHECK(ParseDailyTime("23:59"));
  for (const char* bad : {"24:00", "3:30", "03:60", "0330", "03:3x", "", "-1:30"}) {
    INFO(bad);
    CHECK_FALSE(ParseDailyTime(bad));
  }
}

TEST_CASE("the next run is today's if it is still ahead, else tomorrow's (UTC)") {
  ZoneScope zone("UTC");
  const DailyTime at{3, 30};
  CHECK(NextDailyRun(Utc("2026-03-01T01:00:00Z"), at) == Utc("2026-03-01T03:30:00Z"));
  CHECK(NextDailyRun(Utc("2026-03-01T03:29:59Z"), at) == Utc("2026-03-01T03:30:00Z"));
  // Exactly at the run time: that run is the one happening now; the next is tomorrow.
  CHECK(NextDailyRun(Utc("2026-03-01T03:30:00Z"), at) == Utc("2026-03-02T03:30:00Z"));
  CHECK(NextDailyRun(Utc("2026-03-01T22:00:00Z"), at) == Utc("2026-03-02T03:30:00Z"));
  // Across a month and a year end.
  CHECK(NextDailyRun(Utc("2026-02-28T04:00:00Z"), at) == Utc("2026-03-01T03:30:00Z"));
  CHECK(NextDailyRun(Utc("2026-12-31T23:59:00Z"), {0, 0}) == Utc("2027-01-01T00:00:00Z"));
}

TEST_CASE("purge_at is local time") {
  ZoneScope zone("America/New_York");
  // 03:30 EST is 08:30 UTC in winter; 03:30 EDT is 07:30 UTC in summer.
  CHECK(NextDailyRun(Utc("2026-01-15T12:00:00Z"), {3, 30}) == Utc("2026-01-16T08:30:00Z"));
  CHECK(NextDailyRun(Utc("2026-07-15T12:00:00Z"), {3, 30}) == Utc("2026-07-16T07:30:00Z"));
}

TEST_CASE("spring forward: a purge_at the clock skips runs once, when the gap ends") {
  ZoneScope zone("Europe/Berlin");
  // 2026-03-29: at 02:00 CET (01:00 UTC) clocks jump to 03:00 CEST; 02:30 never happens.
  const DailyTime at{2, 30};
  CHECK(NextDailyRun(Utc("2026-03-28T12:00:00Z"), at) == Utc("2026-03-29T01:00:00Z"));
  // The next day is an ordinary CEST day: 02:30 CEST = 00:30 UTC.
  CHECK(NextDailyRun(Utc("2026-03-29T01:00:00Z"), at) == Utc("2026-03-30T00:30:00Z"));
  // An unaffected time on the same day keeps its place: 01:30 CET = 00:30 UTC.
  CHECK(NextDailyRun(Utc("2026-03-28T12:00:00Z"), {1, 30}) == Utc("2026-03-29T00:30:00Z"));
  // Ticking through the week around it, minute by minute: once a day, every day.
  auto runs = RunsBetween("02:30", Utc("2026-03-26T12:00:00Z"), Utc("2026-04-01T12:00:00Z"));
  CHECK(runs == std::map<std::string, int>{{"2026-03-27", 1},
                                           {"2026-03-28", 1},
                                           {"2026-03-29", 1},
                                           {"2026-03-30", 1},
                                           {"2026-03-31", 1},
                                           {"2026-04-01", 1}});
}

TEST_CASE("fall back: a purge_at the clock shows twice runs at the first only") {
  ZoneScope zone("Europe/Berlin");
  // 2026-10-25: at 03:00 CEST (01:00 UTC) clocks go back to 02:00 CET; 02:30 happens at
  // 00:30 UTC (CEST) and again at 01:30 UTC (CET).
  const DailyTime at{2, 30};
  CHECK(NextDailyRun(Utc("2026-10-24T12:00:00Z"), at) == Utc("2026-10-25T00:30:00Z"));
  CHECK(NextDailyRun(Utc("2026-10-25T00:30:00Z"), at) == Utc("2026-10-26T01:30:00Z"));
  // Between the two 02:30s, the second is not a new run.
  CHECK(NextDailyRun(Utc("2026-10-25T01:10:00Z"), at) == Utc("2026-10-26T01:30:00Z"));
  auto runs = RunsBetween("02:30", Utc("2026-10-23T12:00:00Z"), Utc("2026-10-28T12:00:00Z"));
  CHECK(runs == std::map<std::string, int>{{"2026-10-24", 1},
                                           {"2026-10-25", 1},
                                           {"2026-10-26", 1},
                                           {"2026-10-27", 1},
                                           {"2026-10-28", 1}});
}

TEST_CASE("a purge at midnight runs once per day across the new year") {
  ZoneScope zone("Europe/Berlin");
  auto runs = RunsBetween("00:00", Utc("2026-12-29T12:00:00Z"), Utc("2027-01-02T12:00:00Z"), 7min);
  CHECK(runs == std::map<std::string, int>{
                    {"2026-12-30", 1}, {"2026-12-31", 1}, {"2027-01-01", 1}, {"2027-01-02", 1}});
}

TEST_CASE("cutoffs come from retention and the clock") {
  const TimePoint now = Utc("2026-06-30T03:30:00Z");
  PurgeRequest r = PurgeCutoffs({7 * 24h, 30 * 24h, 90 * 24h}, now);
  CHECK(r.processed_before == Utc("2026-06-23T03:30:00Z"));
  CHECK(r.dead_before == Utc("2026-05-31T03:30:00Z"));
  CHECK(r.sequences_before == Utc("2026-04-01T03:30:00Z"));
  CHECK_FALSE(r.dry_run);
  CHECK(r.batch > 0);
  CHECK(r.batch <= 1000);  // small batches: an accept never waits long behind one
  CHECK(PurgeCutoffs({}, now, /*dry_run=*/true).dry_run);
}

TEST_CASE("the scheduled purge removes exactly the rows past retention") {
  ZoneScope zone("UTC");
  TestInbox t;
  Inbox& inbox = *t.inbox;
  const TimePoint now = Utc("2026-06-30T03:30:00Z");
  const TimePoint old = now - 8 * 24h;       // past retention.processed (7d), not .dead (30d)
  const TimePoint ancient = now - 31 * 24h;  // past both
  const TimePoint recent = now - 6 * 24h;
  // ignored: no handler. 1100 old ones, so the purge takes several batches.
  for (int i = 0; i < 1100; ++i) {
    REQUIRE(inbox.Accept(MakeEvent("old-ignored-" + std::to_string(i), old)).ok());
  }
  REQUIRE(inbox.Accept(MakeEvent("recent-ignored", recent)).ok());
  // processed, dead and pending, all old.
  REQUIRE(inbox.Accept(MakeEvent("old-processed", old, {"h"})).ok());
  REQUIRE(inbox.Accept(MakeEvent("old-dead", old, {"h"})).ok());
  REQUIRE(inbox.Accept(MakeEvent("ancient-dead", ancient, {"h"})).ok());
  REQUIRE(inbox.Accept(MakeEvent("ancient-pending", ancient, {"h"})).ok());
  auto claimed = inbox.ClaimJobs("test", 10, now, 60s);
  REQUIRE(claimed.ok());
  for (const ClaimedJob& job : *claimed) {
    JobOutcome o;
    o.finished_at = now;
    if (job.event.event_id == "ancient-pending") continue;  // stays processing: never purged
    if (job.event.event_id != "old-processed") {
      o.outcome = Outcome::kPermanent;
      o.next = JobOutcome::Next::kDead;
    }
    REQUIRE(inbox.FinishJob(job, o).ok());
  }
  // stale: a lower sequence after a higher one for the same resource.
  REQUIRE(inbox.Accept(MakeEvent("seq-2", old, {}, "res", 2)).ok());
  REQUIRE(inbox.Accept(MakeEvent("seq-1", old, {}, "res", 1)).ok());

  const uint64_t ignored_before = Metrics().purged_rows.With({"ignored"}).Value();
  Metrics().last_purge.store(0);
  FakeClock clock(now - 1h);
  PurgeSchedule schedule(inbox, ConfigWith("03:30"), clock);
  CHECK_FALSE(schedule.Tick());  // 02:30: not yet
  clock.Set(now);
  auto result = schedule.Tick();
  REQUIRE(result);
  REQUIRE(result->ok());
  const PurgeCounts& counts = **result;
  CHECK(counts.ignored == 1100 + 1);  // and seq-2, stored without handlers: ignored
  CHECK(counts.stale == 1);
  CHECK(counts.processed == 1);
  CHECK(counts.dead == 1);  // ancient-dead; old-dead is within retention.dead
  CHECK(schedule.next_run() == Utc("2026-07-01T03:30:00Z"));
  CHECK(Metrics().purged_rows.With({"ignored"}).Value() == ignored_before + 1101);
  // hookbox_purge_last_success_timestamp_seconds: the wall clock's time of the completed
  // run (what an alert compares with time()), not the schedule's clock.
  const double wall =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(Metrics().last_purge.load() > wall - 60);
  CHECK(Metrics().last_purge.load() <= wall);

  ListFilter all;
  all.limit = 100000;
  auto left = inbox.List(all);
  REQUIRE(left.ok());
  std::set<std::string> ids;
  for (const InboxRow& r : *left) ids.insert(r.event_id);
  CHECK(ids == std::set<std::string>{"recent-ignored", "old-dead", "ancient-pending"});
  CHECK_FALSE(schedule.Tick());  // once a day
}

TEST_CASE("the schedule thread stops promptly") {
  TestInbox t;
  SystemClock clock;
  PurgeSchedule schedule(*t.inbox, ConfigWith("03:30"), clock);
  schedule.Start();
  schedule.Stop();  // returns although the next run is hours away
  schedule.Stop();
}
