// Picks the inbox backend from the `database` setting: a postgres:// or postgresql:// URL is
// the PostgreSQL backend (several replicas, one shared inbox), anything else a SQLite file.
#include "inbox/inbox.h"
#include "inbox/postgres/pg.h"
#include "inbox/postgres/postgres_inbox.h"
#include "inbox/sqlite/sqlite_inbox.h"

namespace hookbox {

StatusOr<std::unique_ptr<Inbox>> OpenInbox(const InboxOptions& options,
                                           std::vector<std::string>* applied) {
  if (IsPostgresDatabase(options.database)) return OpenPostgresInbox(options, applied);
  return OpenSqliteInbox(options, applied);
}

bool IsPostgresDatabase(std::string_view database) { return pg::IsPostgresUrl(database); }

std::string DatabaseForLogs(const std::string& database) {
  return IsPostgresDatabase(database) ? pg::RedactUrl(database) : database;
}

}  // namespace hookbox
