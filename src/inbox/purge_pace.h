// The pace of a purge (InboxAdmin::Purge; the daily purge and `hookbox purge`): how many rows
// its next delete transaction takes and how long it pauses after one. Accepts wait behind
// each purge transaction: in SQLite's writer queue, or for its write lock when the purge
// runs as `hookbox purge` beside the daemon; on PostgreSQL for the locks of the rows and
// index pages it deletes, and for the disk its WAL and page writes share with their
// commits. So a transaction takes at most the request's batch, fewer while one takes longer
// than kTransaction (deleting a row rewrites its pages, its index entries, its jobs and
// attempts: on a large database, pages all over the file), and after each the purge pauses
// as long as it took (at least kPause): a writer waiting for the lock gets it, and the
// purge's writes take at most about half of the disk's time. Policy only: no SQL here (the
// transactions are sql_operator.cc's, SqlInbox::PurgeRows).
#pragma once

#include <chrono>
#include <cstdint>

namespace hookbox {

class PurgePace {
 public:
  using Duration = std::chrono::steady_clock::duration;
  static constexpr auto kTransaction = std::chrono::milliseconds(20);
  static constexpr auto kPause = std::chrono::milliseconds(3);
  static constexpr int64_t kMinBatch = 10;

  // `most`: the request's batch (PurgeRequest::batch), at least 1; the first transaction
  // takes that many rows.
  explicit PurgePace(int64_t most);

  // The rows the next transaction takes.
  int64_t batch() const { return batch_; }

  // After a transaction of batch() rows took `took`: sets the next batch (half while one
  // takes longer than kTransaction, twice while one takes under a quarter of it, never more
  // than `most` nor fewer than kMinBatch, or than `most` when that is smaller) and returns
  // the pause before it.
  Duration After(Duration took);

 private:
  int64_t most_;
  int64_t batch_;
};

}  // namespace hookbox
