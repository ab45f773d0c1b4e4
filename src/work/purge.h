// The daily purge: at `purge_at` (local time) the daemon deletes what retention no longer
// keeps — processed, stale and ignored rows received more than `retention.processed` ago,
// dead rows past `retention.dead`, sequence-gate rows not updated for `retention.sequences`
// — in small batches (Inbox::Purge), so accepts never wait long behind it. Pending and
// processing rows are never purged. `hookbox purge` runs the same cutoffs on demand.
//
// Time comes from a Clock, and the schedule is a pure function of it (NextDailyRun), so
// tests cross midnight and daylight-saving changes without sleeping. The schedule follows
// cron's rules for local time: on the day the clock skips `purge_at` (spring forward) the
// purge runs as soon as the skipped stretch is over; on the day the clock shows it twice
// (fall back) it runs at the first one only. A daemon that is down at `purge_at` purges at
// the next day's; there is no catch-up run.
//
// Thread-safe: Tick(), Swap() and Stop() may be called from any thread.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "config/config.h"
#include "inbox/inbox_admin.h"
#include "ops/clock.h"

namespace hookbox {

struct DailyTime {
  int hour = 3;
  int minute = 30;
};

// "HH:MM", 24-hour; nullopt when it is not one (check-config has refused it already).
std::optional<DailyTime> ParseDailyTime(std::string_view text);

// The first instant after `after` at which the local wall clock (the process's time zone:
// TZ, else /etc/localtime) reads `at` on a later date than the one that instant's run
// would repeat — i.e. once per calendar day, with the DST rules above.
TimePoint NextDailyRun(TimePoint after, DailyTime at);

// The rows a purge at `now` removes under `retention`.
PurgeRequest PurgeCutoffs(const Retention& retention, TimePoint now, bool dry_run = false);

// Runs one purge at `now` and logs how many rows of each kind went; the daemon's counters
// (hookbox_purged_rows_total) count them.
StatusOr<PurgeCounts> PurgeNow(InboxAdmin& admin, const Retention& retention, TimePoint now);

class PurgeSchedule final {
 public:
  PurgeSchedule(InboxAdmin& admin, std::shared_ptr<const Config> config, const Clock& clock);
  ~PurgeSchedule();
  PurgeSchedule(const PurgeSchedule&) = delete;
  PurgeSchedule& operator=(const PurgeSchedule&) = delete;

  // Runs Tick() on a thread until Stop(), waking at the next run time (and at least every
  // minute, so a wall-clock jump is noticed).
  void Start();
  // Wakes and joins the thread; a purge under way finishes first. Safe to call twice.
  void Stop();
  // SIGHUP: new retention and purge_at; a changed purge_at reschedules from now.
  void Swap(std::shared_ptr<const Config> config);

  // One step: when the clock has reached the next run time, purges and schedules the next
  // run; returns the counts (or the storage error) then, nullopt when it was not time yet.
  std::optional<StatusOr<PurgeCounts>> Tick();
  TimePoint next_run() const;

 private:
  void Loop();

  InboxAdmin& admin_;
  const Clock& clock_;
  mutable std::mutex mu_;  // guards config_, next_run_, stopping_
  std::condition_variable cv_;
  std::shared_ptr<const Config> config_;
  TimePoint next_run_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hookbox
