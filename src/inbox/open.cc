// Picks the inbox backend from the `database` setting. PostgreSQL URLs are recognised so the
// error is clear until that backend lands.
#include "inbox/inbox.h"
#include "inbox/sqlite/sqlite_inbox.h"

namespace hookbox {

StatusOr<std::unique_ptr<Inbox>> OpenInbox(const InboxOptions& options,
                                           std::vector<std::string>* applied) {
  if (options.database.rfind("postgres://", 0) == 0 ||
      options.database.rfind("postgresql://", 0) == 0) {
    return Status::Unavailable("the PostgreSQL backend is not built into this release",
                               "use a SQLite file path for `database`");
  }
  return OpenSqliteInbox(options, applied);
}

}  // namespace hookbox
