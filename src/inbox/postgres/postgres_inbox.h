// The PostgreSQL inbox: several hookbox replicas share one database. The same tables and
// meanings as the SQLite inbox, with PostgreSQL's own concurrency: every operation is one
// transaction on a pooled connection, concurrent deliveries of one event meet at the
// unique index (the second waits for the first to commit, then counts as a duplicate),
// deliveries of one resource serialize on a transaction-scoped advisory lock and the
// sequences row, and workers of every replica claim jobs with FOR UPDATE SKIP LOCKED.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "inbox/inbox.h"

namespace hookbox {

StatusOr<std::unique_ptr<Inbox>> OpenPostgresInbox(const InboxOptions& options,
                                                   std::vector<std::string>* applied);

}  // namespace hookbox
