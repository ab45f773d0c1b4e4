// The SQLite inbox: one file in WAL mode.
//
// Writes are group-committed on the callers' own threads: a write (an Accept, a Clear)
// queues, and the first in the queue leads: it takes everything queued, runs it as ONE
// transaction with a SAVEPOINT per write (one write's failure rolls back only its own part),
// commits once (one fsync for the whole group), wakes each caller with its own result and
// hands the lead to the next in the queue. No thread exists only to write.
// Reads (CLI listings, /readyz) use a second connection under a mutex; WAL keeps them from
// blocking the writer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "inbox/inbox.h"

namespace hookbox {

StatusOr<std::unique_ptr<Inbox>> OpenSqliteInbox(const InboxOptions& options,
                                                 std::vector<std::string>* applied);

}  // namespace hookbox
