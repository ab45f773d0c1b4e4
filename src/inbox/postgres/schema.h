// PostgreSQL: where hookbox's tables are, resolved once at open, and the migrations that
// bring them up to date (DESIGN.md, "Opening the inbox"). Split from postgres_inbox.cc: the
// schema is decided before the inbox's pool exists, on one connection of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "inbox/backend.h"
#include "inbox/postgres/pg.h"

namespace hookbox::pg {

// The advisory lock of migrations and of `sql` handlers' setup: one fixed key.
inline constexpr int64_t kMigrationLock = 0x686f6f6b626f78;  // "hookbox"

// Where hookbox's tables are, resolved once at open (DESIGN.md, "Opening the inbox"). Every
// statement hookbox runs names its tables without a schema, so each connection of the pool
// starts with `SET search_path TO <search_path>`: the schema first, then the rest of the path
// the session resolved at open, spelled out (no "$user" left to resolve differently later).
// An unqualified name then finds the schema's table before any other, CREATE puts new tables
// there, and a `sql` handler's own tables resolve as they did on the session's path.
struct SchemaChoice {
  std::string schema;       // as named in the catalog
  std::string quoted;       // quote_ident(schema), for SQL
  std::string search_path;  // for SET search_path TO ...
  int64_t version = 0;      // the highest migration recorded there (this binary's numbers,
                            // inbox/backend.h: Renumbered); 0 when it has no tables
  std::vector<RecordedMigration> recorded;  // schema_migrations' rows
};

// `serve` and `migrate`: resolves the schema and applies what is missing, in one transaction
// under the migration lock (replicas starting at once apply each migration once). An inbox
// already up to date is only read: no CREATE privilege is needed then.
Status Migrate(Conn& c, SchemaChoice* choice, std::vector<std::string>* applied);

// The operator's verbs: resolve the schema and check it, with reads only (see schema.cc).
Status CheckSchema(Conn& c, SchemaChoice* choice);

}  // namespace hookbox::pg
