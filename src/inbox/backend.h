// What the two backends (sqlite/, postgres/) share besides the Inbox contract: the lease
// token a claim writes, the job status, failed-sql outcome and handler output a finish
// records, and the rows a purge deletes. Each backend keeps only its SQL
// and its connection handling; this is the rest. (VerdictName, for every caller, is
// declared in inbox.h and defined with these in backend.cc.)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "inbox/inbox.h"
#include "inbox/migration.h"

namespace hookbox {

// The newest of a backend's migrations.
int64_t LatestMigration(const std::vector<Migration>& migrations);
// A row of schema_migrations: what a database says it has applied.
struct RecordedMigration {
  int64_t version = 0;
  std::string name;  // "0005_inbox_by_body"
};
// The migrations are numbered alike on both backends: a number names one change, and a
// backend without that change has no file of the number (gaps are skipped). Before
// 2026-12-07 each backend counted its own (SQLite's 0004_inbox_by_body was PostgreSQL's
// 0003). A database migrated then records the old numbers, so a recorded migration is
// known by its name after the number ("inbox_by_body"): Renumbered gives, in descending
// order of their recorded version, the rows whose number is not `migrations`' number for
// that name, with that number and name (rows of unknown names, a newer binary's, are kept).
// Updated in that order, no two rows ever hold one number, since no change's number fell.
std::vector<std::pair<RecordedMigration, const Migration*>> Renumbered(
    std::vector<RecordedMigration> recorded, const std::vector<Migration>& migrations);
// The database's schema version in `migrations`' numbers: the highest of the recorded rows
// once renumbered; 0 for none.
int64_t SchemaVersionOf(const std::vector<RecordedMigration>& recorded,
                        const std::vector<Migration>& migrations);
// Whether `migrate` has anything to write: a migration of `migrations` the database lacks,
// or a row under an old number. (Renumbering leaves SchemaVersionOf as it was.)
bool MigrationDue(const std::vector<RecordedMigration>& recorded,
                  const std::vector<Migration>& migrations);
// For the operator's verbs, which never migrate: Unavailable("the database's schema is behind
// this hookbox") when `where` (the file, or the schema) has migration `version` and
// `migrations` go further; Ok otherwise.
Status CheckVersion(const std::string& where, int64_t version,
                    const std::vector<Migration>& migrations);

// A fresh random token (32 hex digits) for a claim's lease: a finish moves the job only if
// the token it holds is still the job's (the compare-and-swap that fences an old owner).
std::string NewLeaseToken();

// Conflict kLeaseLost ("lease lost") about `job`: its lease token no longer holds
// (FinishJob, RenewLeases), so another worker or request owns the job now.
Status LeaseLost(const ClaimedJob& job);

// Conflict kEventBusy ("event is being processed") about a row Clear() refuses: a job of it
// holds a live lease.
Status ClearRefused(const std::string& endpoint, const std::string& event_id);

// The jobs.status a finish records for what comes next: done, pending (a retry) or dead.
const char* JobStatusFor(JobOutcome::Next next);

// What a finish records when the handler's TransactionalWork failed (its effects rolled
// back): the dispatcher's outcome for a failed run (`work_failed`: its retry or dead
// decision; `outcome` when there is none) with "<kind>: <the error>" as the detail.
JobOutcome WorkFailedOutcome(const JobOutcome& outcome, const JobOutcome* work_failed,
                             std::string_view kind, const Status& error);

// The last_error of a job held for want of its handler (Inbox::HoldForHandler).
std::string HeldReason(const std::string& handler);

// A handler's output as a finish stores it (an attempt's detail, a job's last error), on
// either backend: each byte that is not valid UTF-8, and each NUL, replaced by U+FFFD. A
// PostgreSQL TEXT column cannot take them, and the same handler must leave the same record
// on SQLite, so that `inbox show` and the console read alike on both.
std::string StorableText(std::string_view handler_output);

// One inbox status a purge deletes: rows with it received before `before` go, and their
// number goes to `*count`. Finished rows (processed, stale, ignored) go after
// `processed_before`, dead ones after `dead_before`.
struct PurgeTarget {
  const char* status;
  TimePoint before;
  int64_t* count;
};
std::array<PurgeTarget, 4> PurgeTargets(const PurgeRequest& r, PurgeCounts* counts);

// The one condition on inbox rows that both a purge's count (dry run) and its delete use, so
// the two cannot disagree: the status is parameter `first`, the cutoff parameter `first` + 1
// (written `mark` and the number, the cutoff followed by `time_cast`: "" or "::timestamptz"),
// and no job of the row is unfinished. A row is `dead` as soon as one of its jobs is, while
// its other jobs may still be pending or running: such a row is kept until they finish.
std::string PurgeRowCondition(char mark, const char* time_cast, int first = 1);

// A parameter of a query built here: text or an integer.
using SqlValue = std::variant<std::string, int64_t>;

// Queue()'s count of jobs by status, with or without the done ones (an index range each).
const char* QueueCountSql(bool count_done);

// The SQL a query built here is written in: parameters are `?N` (SQLite) or `$N`
// (PostgreSQL), and times compared with received_at are cast to timestamptz on PostgreSQL.
enum class SqlDialect { kSqlite, kPostgres };

// The one translation of an EventFilter into SQL, for List() and the bulk verbs alike: a
// condition on the table `inbox` (by that name, unaliased: the handler and body parts refer
// to inbox.id and inbox.body), each part of the filter that is set ANDed, "" when the filter
// is empty. Every value the operator gave is a bound parameter, appended to *params and
// numbered after those already there; no text of the filter is ever part of the SQL.
//
// Matching, the same on both backends:
// - endpoint, status, handler: equality (handler: the row has a job of that handler);
// - type: a glob over event_type, case-sensitive, `*` any run of characters, `?` one
//   character, every other character itself (SQLite GLOB with `[` escaped as `[[]`;
//   PostgreSQL LIKE with `%`, `_` and `\` escaped);
// - since <= received_at < until;
// - where on a pointer: hookbox_pointer(body, pointer) = VALUE (filter.h, JsonPointerValue;
//   a SQL function on each SQLite connection, a function of the schema on PostgreSQL);
// - where form:NAME=VALUE: one of FormPairSpellings between `&`s of the body (its start and
//   end count as `&`), compared as bytes.
std::string FilterCondition(const EventFilter& f, SqlDialect dialect,
                            std::vector<SqlValue>* params);

// List()'s query after its column list: FROM, the filter's condition (and none for the
// parts not set, so that the planner can use the index that fits), the event id, the page's
// keyset, ORDER BY and LIMIT. Parameter values are appended to *params in order.
std::string ListQueryTail(const ListFilter& f, SqlDialect dialect, std::vector<SqlValue>* params);
// The same without ORDER BY and LIMIT: FROM and WHERE, which Count() counts.
std::string ListQueryFrom(const ListFilter& f, SqlDialect dialect, std::vector<SqlValue>* params);

}  // namespace hookbox
