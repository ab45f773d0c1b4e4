// The daily purge: schedule arithmetic in local time, cutoffs, and the thread (see purge.h).
#include "work/purge.h"

#include <time.h>

#include <algorithm>
#include <charconv>

#include "ops/daemon_metrics.h"
#include "ops/log.h"
#include "ops/storage_health.h"

namespace hookbox {
namespace {

using std::chrono::sys_days;

// A reading of the local wall clock: the local date (days since 1970-01-01) and the
// seconds into that day. Ordered like the readings themselves.
struct Wall {
  int64_t day = 0;
  int64_t second = 0;
  auto operator<=>(const Wall&) const = default;  // NOLINT(modernize-use-nullptr): a false positive
};

Wall LocalWall(time_t t) {
  tm lt{};
  localtime_r(&t, &lt);
  const std::chrono::year_month_day date{std::chrono::year{lt.tm_year + 1900},
                                         std::chrono::month{static_cast<unsigned>(lt.tm_mon + 1)},
                                         std::chrono::day{static_cast<unsigned>(lt.tm_mday)}};
  return {sys_days(date).time_since_epoch().count(),
          lt.tm_hour * 3600 + lt.tm_min * 60 + lt.tm_sec};
}

// The first instant whose wall clock reads at least `at` on local date `day`: `at` itself on
// an ordinary day, the end of the skipped stretch when the clock jumps over `at`, the first
// of the two when it shows `at` twice.
time_t FirstAtOrAfter(int64_t day, DailyTime at) {
  const std::chrono::year_month_day date{sys_days{std::chrono::days{day}}};
  tm want{};
  want.tm_year = static_cast<int>(date.year()) - 1900;
  want.tm_mon = static_cast<int>(static_cast<unsigned>(date.month())) - 1;
  want.tm_mday = static_cast<int>(static_cast<unsigned>(date.day()));
  want.tm_hour = at.hour;
  want.tm_min = at.minute;
  want.tm_isdst = -1;
  // mktime resolves a skipped or repeated time one way or another; a scan around its answer
  // finds the instant the rule above names. UTC offsets change by at most a few hours, on
  // whole minutes, so minute steps over +-3 h hit it exactly.
  const time_t guess = mktime(&want);
  const Wall target{day, at.hour * 3600 + at.minute * 60};
  constexpr time_t kWindow = 3 * 3600;
  for (time_t t = guess - kWindow; t <= guess + kWindow; t += 60) {
    if (LocalWall(t) >= target) return t;
  }
  return guess;
}

}  // namespace

std::optional<DailyTime> ParseDailyTime(std::string_view text) {
  if (text.size() != 5 || text[2] != ':') return std::nullopt;
  DailyTime at;
  auto h = std::from_chars(text.data(), text.data() + 2, at.hour);
  auto m = std::from_chars(text.data() + 3, text.data() + 5, at.minute);
  if (h.ec != std::errc() || h.ptr != text.data() + 2 || m.ec != std::errc() ||
      m.ptr != text.data() + 5 || at.hour < 0 || at.hour > 23 || at.minute < 0 || at.minute > 59) {
    return std::nullopt;
  }
  return at;
}

TimePoint NextDailyRun(TimePoint after, DailyTime at) {
  const time_t now =
      std::chrono::system_clock::to_time_t(std::chrono::floor<std::chrono::seconds>(after));
  const int64_t today = LocalWall(now).day;
  // Today's run if it is still ahead, else tomorrow's; the day after covers a date the
  // zone skips altogether.
  for (int64_t day = today; day <= today + 2; ++day) {
    TimePoint run = std::chrono::system_clock::from_time_t(FirstAtOrAfter(day, at));
    if (run > after) return run;
  }
  return after + std::chrono::hours(24);
}

PurgeRequest PurgeCutoffs(const Retention& retention, TimePoint now, bool dry_run) {
  PurgeRequest r;
  r.processed_before = now - retention.processed;
  r.dead_before = now - retention.dead;
  r.sequences_before = now - retention.sequences;
  r.dry_run = dry_run;
  return r;
}

StatusOr<PurgeCounts> PurgeNow(InboxAdmin& admin, const Retention& retention, TimePoint now) {
  const PurgeRequest request = PurgeCutoffs(retention, now);
  const auto started = std::chrono::steady_clock::now();
  StatusOr<PurgeCounts> counts = admin.Purge(request);
  // A fault is an error line and a count (ops/storage_health.h); contention, which outlasted
  // every batch's wait for the write lock, is not, so it has a line of its own here.
  Storage().Record(kStoragePurge, counts.status());
  if (!counts.ok()) {
    if (IsStorageBusy(counts.status())) {
      LogWarn({{"msg", "purge failed; the next one is tomorrow"},
               {"error", counts.status().ToString()}});
    } else {
      LogInfo({{"msg", "the next purge is tomorrow"}});
    }
    return counts;
  }
  const std::pair<const char*, int64_t> kinds[] = {{"processed", counts->processed},
                                                   {"stale", counts->stale},
                                                   {"ignored", counts->ignored},
                                                   {"dead", counts->dead},
                                                   {"sequences", counts->sequences}};
  nlohmann::json log = {
      {"msg", "purged"},
      {"processed_before", FormatTime(request.processed_before)},
      {"dead_before", FormatTime(request.dead_before)},
      {"sequences_before", FormatTime(request.sequences_before)},
      {"seconds",
       std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}};
  for (const auto& [kind, n] : kinds) {
    log[kind] = n;
    Metrics().purged_rows.With({kind}).Inc(static_cast<uint64_t>(n));
  }
  Metrics().last_purge.store(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
      std::memory_order_relaxed);
  LogInfo(log);
  return counts;
}

PurgeSchedule::PurgeSchedule(InboxAdmin& admin, std::shared_ptr<const Config> config,
                             const Clock& clock)
    : admin_(admin), clock_(clock), config_(std::move(config)) {
  next_run_ = NextDailyRun(clock_.Now(), ParseDailyTime(config_->purge_at).value_or(DailyTime{}));
}

PurgeSchedule::~PurgeSchedule() { Stop(); }

void PurgeSchedule::Start() {
  LogInfo({{"msg", "purge scheduled"}, {"at", FormatTime(next_run())}});
  thread_ = std::thread([this] { Loop(); });
}

void PurgeSchedule::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PurgeSchedule::Swap(std::shared_ptr<const Config> config) {
  {
    std::lock_guard lock(mu_);
    const bool moved = config->purge_at != config_->purge_at;
    config_ = std::move(config);
    if (!moved) return;
    next_run_ = NextDailyRun(clock_.Now(), ParseDailyTime(config_->purge_at).value_or(DailyTime{}));
  }
  LogInfo({{"msg", "purge rescheduled"}, {"at", FormatTime(next_run())}});
  cv_.notify_all();
}

TimePoint PurgeSchedule::next_run() const {
  std::lock_guard lock(mu_);
  return next_run_;
}

std::optional<StatusOr<PurgeCounts>> PurgeSchedule::Tick() {
  const TimePoint now = clock_.Now();
  std::shared_ptr<const Config> config;
  {
    std::lock_guard lock(mu_);
    if (now < next_run_) return std::nullopt;
    config = config_;
  }
  StatusOr<PurgeCounts> counts = PurgeNow(admin_, config->retention, now);
  std::lock_guard lock(mu_);
  // From the time this run was due to start: however long it took, the next is on a
  // later date.
  next_run_ = NextDailyRun(now, ParseDailyTime(config_->purge_at).value_or(DailyTime{}));
  return counts;
}

void PurgeSchedule::Loop() {
  constexpr auto kRecheck = std::chrono::minutes(1);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    (void)Tick();
    lock.lock();
    const auto wait = std::clamp<std::chrono::system_clock::duration>(
        next_run_ - clock_.Now(), std::chrono::seconds(0), kRecheck);
    cv_.wait_for(lock, wait, [this] { return stopping_; });
  }
}

}  // namespace hookbox
