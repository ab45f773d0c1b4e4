// SQLite's WAL checkpoints, never on the accept path (checkpoints.h). SQLite's own would run inside
// the COMMIT that finds 1000 pages in the WAL, copying them into the database file and fsyncing it
// while every delivery of that group waits. Here the writer only counts: after each commit
// (OnWalCommit, on the committing thread) it notes the WAL's length and, every
// kCheckpointPages new pages, wakes this object's thread, which copies the WAL into the
// database on its own connection (PASSIVE: it never waits for, or blocks, writers or
// readers).
//
// SQLite starts the WAL file over only when a write begins with all of it copied, which
// under steady load never happens by itself: each copy ends a little behind the writer.
// So once the WAL has passed kWalRestartPages, the checkpointer copies again until what is
// left is short (each pass copies only what came in during the one before), then copies
// that rest in an Exclusive turn of the group commit: writes queue meanwhile, for the copy
// of at most kRestartTail pages and one fsync of the database, never for the bulk; the
// next write starts the WAL over, and journal_size_limit cuts the file back after a burst.
// If the disk cannot keep up and the WAL reaches kWalForcePages, the rest is copied in the
// turn whatever its length, so that the WAL stays bounded.
#include "inbox/sqlite/checkpoints.h"

#include "ops/storage_health.h"

namespace hookbox::sqlite {

WalCheckpointer::WalCheckpointer(sqlite3* writer, std::unique_ptr<Db> db, Exclusive exclusive)
    : writer_(writer), db_(std::move(db)), exclusive_(std::move(exclusive)) {
  sqlite3_wal_hook(writer_, &WalCheckpointer::OnWalCommit, this);
  thread_ = std::thread([this] { Loop(); });
}

WalCheckpointer::~WalCheckpointer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
  sqlite3_wal_hook(writer_, nullptr, nullptr);
}

int WalCheckpointer::OnWalCommit(void* self, sqlite3*, const char*, int pages) {
  auto* checkpointer = static_cast<WalCheckpointer*>(self);
  if (pages < checkpointer->next_checkpoint_ - kCheckpointPages) {
    checkpointer->next_checkpoint_ = kCheckpointPages;  // the WAL started over
  }
  if (pages >= checkpointer->next_checkpoint_) {
    checkpointer->next_checkpoint_ = pages + kCheckpointPages;
    {
      std::lock_guard lock(checkpointer->mu_);
      checkpointer->due_ = true;
    }
    checkpointer->cv_.notify_one();
  }
  return SQLITE_OK;
}

// A checkpoint that fails for a reason other than contention (an I/O error on the WAL's or
// the database file's fsync, a full disk) is an error line and a count (CopyWal, through
// ops/storage_health.h), and is tried again every kCheckpointRetry until one succeeds, not
// only at the next kCheckpointPages: a WAL that cannot be copied grows, and the daemon
// says so (/readyz, hookbox_wal_bytes) until it can again.
void WalCheckpointer::Loop() {
  bool failing = false;  // the last copy that was not contended met a fault
  for (;;) {
    {
      std::unique_lock lock(mu_);
      auto woken = [this] { return stopping_ || due_; };
      if (failing) {
        cv_.wait_for(lock, kCheckpointRetry, woken);
      } else {
        cv_.wait(lock, woken);
      }
      if (stopping_) return;
      due_ = false;
    }
    WalState wal;
    // BUSY (another checkpoint runs, say in a CLI process) is fine: the next wake retries.
    if (!CopyWal(&wal, &failing)) continue;
    for (int pass = 0; pass < kCatchUpPasses && wal.pages >= kWalRestartPages &&
                       wal.pages < kWalForcePages && wal.left() > kRestartTail;
         ++pass) {
      if (!CopyWal(&wal, &failing)) break;
    }
    if (!failing && wal.pages >= kWalRestartPages &&
        (wal.left() <= kRestartTail || wal.pages >= kWalForcePages)) {
      exclusive_([&] { CopyWal(&wal, &failing); });
    }
  }
}

// One PASSIVE copy (which may copy less than all, or nothing, beside readers: that is no
// failure). False when it did not complete: contention (quiet, *failing as it was) or a
// fault (logged, counted, *failing set); a completed copy clears *failing.
bool WalCheckpointer::CopyWal(WalState* wal, bool* failing) {
  const int rc = sqlite3_wal_checkpoint_v2(db_->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                           &wal->pages, &wal->copied);
  if (rc == SQLITE_OK) {
    *failing = false;
    Storage().Record(kStorageCheckpoint, Status::Ok());
    return true;
  }
  const Status s = db_->Error(rc, "checkpoint");
  if (!IsStorageBusy(s)) *failing = true;
  Storage().Record(kStorageCheckpoint, s);
  return false;
}

}  // namespace hookbox::sqlite
