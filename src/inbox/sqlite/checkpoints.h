// SQLite's WAL checkpoints, taken off the accept path: the writer's commits only count the
// WAL's pages, and a thread of its own copies the WAL into the database on a connection of
// its own (see checkpoints.cc for when, and how the WAL file starts over).
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "inbox/sqlite/db.h"

namespace hookbox::sqlite {

class WalCheckpointer {
 public:
  // Runs the function given while no write runs (a turn of the writer's group commit).
  using Exclusive = std::function<void(const std::function<void()>&)>;

  // Replaces SQLite's automatic checkpoint of `writer`'s database: a hook on `writer` notes
  // each commit's WAL length (it runs on the committing thread), and the copies run on `db`,
  // on this object's thread, until it is destroyed.
  WalCheckpointer(sqlite3* writer, std::unique_ptr<Db> db, Exclusive exclusive);
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

 private:
  struct WalState {
    int pages = 0;   // frames in the WAL
    int copied = 0;  // of which already in the database file
    int left() const { return pages - copied; }
  };

  static int OnWalCommit(void* self, sqlite3*, const char*, int pages);
  void Loop();
  bool CopyWal(WalState* wal, bool* failing);

  // About 4 MiB of WAL per background checkpoint (SQLite's own default interval); the WAL
  // file started over at about 32 MiB, after at most kCatchUpPasses extra copies, with at
  // most kRestartTail pages (1 MiB) copied while writes wait, or whatever is left at 128 MiB.
  static constexpr int kCheckpointPages = 1000;
  static constexpr int kWalRestartPages = 8000;
  static constexpr int kWalForcePages = 4 * kWalRestartPages;
  static constexpr int kRestartTail = 256;
  static constexpr int kCatchUpPasses = 8;
  static constexpr auto kCheckpointRetry = std::chrono::seconds(1);

  sqlite3* const writer_;
  const std::unique_ptr<Db> db_;  // used by thread_ only
  const Exclusive exclusive_;
  std::mutex mu_;  // guards due_, stopping_
  std::condition_variable cv_;
  bool due_ = false;
  bool stopping_ = false;
  int next_checkpoint_ = kCheckpointPages;  // the committing thread only
  std::thread thread_;                      // last: started once the rest is set
};

}  // namespace hookbox::sqlite
