// The SQLite inbox: one file in WAL mode.
//
// Writes go through one writer thread that owns the write connection. Request threads hand
// it a write (an Accept, a Clear) and wait; it takes everything queued, runs it as ONE
// transaction with a SAVEPOINT per write (one write's failure rolls back only its own part),
// commits once (one fsync for the whole group) and wakes each caller with its own result.
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
