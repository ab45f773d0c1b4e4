// PostgreSQL's schema at open: which schema holds hookbox's tables, and its migrations
// (see schema.h).
#include "inbox/postgres/schema.h"

#include "base/status_macros.h"
#include "inbox/backend.h"
#include "inbox/migration.h"

namespace hookbox::pg {
namespace {

// "a", "b" for messages.
std::string Names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "\"" : ", \"") + n + "\"";
  return out;
}

// The session's search_path as it resolved: the schemas it reaches, in order (existing ones
// the role has USAGE on: current_schemas(false)), quoted, and which of them hold hookbox's
// tables (schema_migrations and inbox: another program's schema_migrations alone is not an
// inbox); and the schemas off the path that hold them.
struct SessionPath {
  std::vector<std::string> names, quoted, holders, off_path;
  size_t first_holder = 0;         // into names, when holders is not empty
  std::string setting;             // as SHOW search_path prints it
  bool set_by_connection = false;  // by the URL's options or PGOPTIONS
  // For messages: the setting and the schemas it reaches.
  std::string Describe() const {
    return "the search_path " + (setting.empty() ? std::string("''") : setting) + " reaches " +
           (names.empty() ? std::string("no schema this role may use")
                          : (names.size() == 1 ? "schema " : "schemas ") + Names(names));
  }
};

StatusOr<SessionPath> ReadSessionPath(Conn& c) {
  // Every schema of the database: those on the path first, in its order (pos), then by name.
  ASSIGN_OR_RETURN(
      pg::Result schemas,
      c.Exec("SELECT s.nspname, quote_ident(s.nspname), s.pos IS NOT NULL,"
             " (SELECT count(DISTINCT k.relname) = 2 FROM pg_catalog.pg_class k"
             " WHERE k.relnamespace = s.oid AND k.relname IN ('schema_migrations', 'inbox')"
             " AND k.relkind IN ('r', 'p'))"
             " FROM (SELECT oid, nspname, array_position(current_schemas(false), nspname) AS pos"
             " FROM pg_catalog.pg_namespace) s ORDER BY s.pos, s.nspname"));
  ASSIGN_OR_RETURN(pg::Result setting,
                   c.Exec("SELECT current_setting('search_path'), source FROM pg_settings"
                          " WHERE name = 'search_path'"));
  SessionPath out;
  for (int i = 0; i < schemas.rows(); ++i) {
    const bool on_path = schemas.Bool(i, 2), holds = schemas.Bool(i, 3);
    if (!on_path) {
      if (holds) out.off_path.push_back(schemas.Text(i, 0));
      continue;
    }
    if (holds && out.holders.empty()) out.first_holder = out.names.size();
    if (holds) out.holders.push_back(schemas.Text(i, 0));
    out.names.push_back(schemas.Text(i, 0));
    out.quoted.push_back(schemas.Text(i, 1));
  }
  if (setting.rows()) {
    out.setting = setting.Text(0, 0);
    out.set_by_connection = setting.Text(0, 1) == "client";
  }
  return out;
}

// Resolves the schema: the one schema on the session's search_path that holds hookbox's tables,
// or, with none and `create`, the first schema on the path (current_schema(): where CREATE
// would put a table). One schema decides both where the tables are looked up and where they
// are created and read: otherwise a schema named after the role, added later, would become a
// second, empty inbox, and every event already processed would be accepted again as new
// (docs/SECURITY.md rows 80-82). So the cases where the path alone cannot tell are refused,
// naming the schemas and the setting that pins one:
// - tables in two schemas of the path (an inbox already forked): which one is the inbox is
//   the operator's call;
// - none on the path, but some schema of the database off the path holds them (another role's
//   path, a renamed schema), unless the connection itself set search_path (the URL's
//   `options=-csearch_path%3D...`, or PGOPTIONS): a new inbox is then on purpose.
StatusOr<SchemaChoice> ResolveSchema(Conn& c, bool create) {
  ASSIGN_OR_RETURN(const SessionPath path, ReadSessionPath(c));
  if (path.holders.size() > 1) {
    return Status::Unavailable(
        "hookbox tables in more than one schema",
        "schemas " + Names(path.holders) + " each hold an inbox, and " + path.Describe() +
            ": pin the one that is the inbox with ?options=-csearch_path%3D<schema> in the "
            "database URL (see README, PostgreSQL)");
  }
  if (path.holders.empty()) {
    if (!path.off_path.empty() && !(create && path.set_by_connection)) {
      return Status::Unavailable(
          "no hookbox tables on the search_path",
          "schema " + Names(path.off_path) + " holds them, but " + path.Describe() +
              " (it leaves out schemas this role has no USAGE on): to use them, add "
              "?options=-csearch_path%3D" +
              path.off_path.front() + " to the database URL (see README, PostgreSQL)");
    }
    if (!create) {
      return Status::Unavailable("no hookbox tables in this database",
                                 path.Describe() + ": run `hookbox migrate` first (or `serve`)");
    }
    if (path.names.empty()) {
      return Status::Unavailable("no schema to create hookbox's tables in",
                                 path.Describe() +
                                     ": create one, or name one with "
                                     "?options=-csearch_path%3D<schema> in the URL");
    }
  }
  const size_t chosen = path.first_holder;
  SchemaChoice out;
  out.schema = path.names[chosen];
  out.quoted = path.quoted[chosen];
  out.search_path = out.quoted;
  for (size_t i = 0; i < path.names.size(); ++i) {
    if (i != chosen) out.search_path += ", " + path.quoted[i];
  }
  if (!path.holders.empty()) {
    ASSIGN_OR_RETURN(pg::Result v,
                     c.Exec("SELECT version, name FROM " + out.quoted + ".schema_migrations"));
    for (int i = 0; i < v.rows(); ++i) out.recorded.push_back({v.Int(i, 0), v.Text(i, 1)});
    out.version = SchemaVersionOf(out.recorded, kPostgresMigrations);
  }
  return out;
}

}  // namespace

// `serve` and `migrate`: resolves the schema and applies what is missing, in one transaction
// under the migration lock (replicas starting at once apply each migration once). An inbox
// already up to date is only read: no CREATE privilege is needed then.
Status Migrate(Conn& c, SchemaChoice* choice, std::vector<std::string>* applied) {
  RETURN_IF_ERROR(
      Exec(c, "SELECT pg_advisory_xact_lock($1::bigint)", Params().Add(kMigrationLock)));
  ASSIGN_OR_RETURN(*choice, ResolveSchema(c, /*create=*/true));
  if (!MigrationDue(choice->recorded, kPostgresMigrations)) return Status::Ok();
  // The migrations name their tables without a schema: they go where the pool will look.
  RETURN_IF_ERROR(c.Run("SET LOCAL search_path TO " + choice->search_path));
  RETURN_IF_ERROR(c.Run("CREATE TABLE IF NOT EXISTS " + choice->quoted +
                        ".schema_migrations (version integer PRIMARY KEY,"
                        " name text NOT NULL, applied_at timestamptz NOT NULL)"));
  // A schema migrated before the numbers were shared records the old ones: given this
  // binary's, in the order that never puts two rows on one number.
  for (const auto& [row, m] : Renumbered(choice->recorded, kPostgresMigrations)) {
    RETURN_IF_ERROR(Exec(c,
                         "UPDATE " + choice->quoted +
                             ".schema_migrations SET version = $1, name = $2 WHERE version = $3",
                         Params().Add(int64_t{m->version}).Add(m->name).Add(row.version)));
  }
  for (const Migration& m : kPostgresMigrations) {
    if (m.version <= choice->version) continue;
    RETURN_IF_ERROR(c.Run(m.sql));
    RETURN_IF_ERROR(
        Exec(c,
             "INSERT INTO " + choice->quoted +
                 ".schema_migrations (version, name, applied_at) VALUES ($1, $2, now())",
             Params().Add(int64_t{m.version}).Add(m.name)));
    if (applied) applied->push_back(m.name);
  }
  choice->version = LatestMigration(kPostgresMigrations);
  return Status::Ok();
}

// The operator's verbs: resolve the schema and check it, with reads only. They never create
// or migrate (no CREATE privilege, no lock): a database without hookbox's tables, or whose
// migrations are behind this binary (its statements may use what they add), is refused.
Status CheckSchema(Conn& c, SchemaChoice* choice) {
  ASSIGN_OR_RETURN(*choice, ResolveSchema(c, /*create=*/false));
  return CheckVersion("schema \"" + choice->schema + "\"", choice->version, kPostgresMigrations);
}

}  // namespace hookbox::pg
