// The durable inbox: the one interface through which hookbox reaches storage, as four
// roles, each client holding the one it uses: EventStore (event_store.h, receive/),
// JobQueue (job_queue.h, the dispatcher), HandlerStates (handler_states.h) and InboxAdmin
// (inbox_admin.h, the operator's). One object (SqlInbox, on either database) plays all
// four, as Inbox; nothing else runs SQL. The inbox knows no HTTP, no provider, no config
// and no handler: it stores Events and answers with Verdicts, and shares with the handlers
// only the plain types of base/job.h (the event a job runs on, its Outcome) and the
// TransactionalWork some run in its transaction (base/transactional_work.h).
//
// Thread-safety: every method may be called from any thread at the same time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inbox/event_store.h"
#include "inbox/handler_states.h"
#include "inbox/inbox_admin.h"
#include "inbox/job_queue.h"

namespace hookbox {

// The whole inbox: every role. What OpenInbox returns and the backends implement.
class Inbox : public EventStore, public JobQueue, public HandlerStates, public InboxAdmin {
 public:
  ~Inbox() override = default;
};

struct InboxOptions {
  std::string database;  // SQLite file path, or a postgres:// / postgresql:// URL
  bool durable = true;   // durability: full (fsync at every commit)
  // `serve` and `migrate`: create the file (SQLite) or the tables (PostgreSQL) if missing and
  // apply the migrations this binary has and the database lacks. false, the operator's verbs:
  // open what exists and only read at open (no write lock, no CREATE privilege, nothing
  // created); a database without hookbox's tables or behind this binary is Unavailable.
  bool create = true;
};

// Opens the backend the database string names; with `create`, brings its schema up to date.
// On PostgreSQL the schema is resolved once, here, and every connection is pinned to it
// (DESIGN.md, "Opening the inbox"). Unavailable when the database cannot be opened, migrated
// or (without `create`) used as it is.
StatusOr<std::unique_ptr<Inbox>> OpenInbox(const InboxOptions& options,
                                           std::vector<std::string>* applied_migrations = nullptr);

// The database setting as logs may show it: a PostgreSQL URL's password masked.
std::string DatabaseForLogs(const std::string& database);

// Whether `database` names the PostgreSQL backend (a postgres:// or postgresql:// URL),
// the one OpenInbox opens for it; anything else is a SQLite file. For what the callers
// size or refuse by backend (descriptors, `hookbox backup`), without knowing postgres/.
bool IsPostgresDatabase(std::string_view database);

}  // namespace hookbox
