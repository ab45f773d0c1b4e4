// PostgreSQL's grouped statements: many accepts, or many finishes, in one statement each, so
// that a group costs one round trip (postgres_inbox.cc decides when a group applies, and
// what follows it: a duplicate's count, a lost lease's answer).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "inbox/inbox.h"
#include "inbox/postgres/pg.h"

namespace hookbox::pg {

// A PostgreSQL array literal of texts, {"a","b\"c"}; NULL for an empty optional.
std::string TextArray(const std::vector<std::optional<std::string>>& items);
std::string TextArray(const std::vector<std::string>& items);

// Inserts the rows of `events` and their jobs, in the order given, in one statement with ON
// CONFLICT DO NOTHING (a row already stored, or stored by a concurrent statement, is
// skipped): the (endpoint, event_id) of the rows it inserted. `events` names each
// (endpoint, event_id) once, and holds no event with a resource, a sync owner or body dedupe.
// Outside a transaction it is one: on failure nothing was stored.
StatusOr<std::set<std::pair<std::string, std::string>>> InsertEvents(
    Conn& c, const std::vector<const Event*>& events);

// Every finish of `finishes` whose job still holds its lease token (FinishInto's
// compare-and-swap) moves its job on and records its attempt, in one statement: the ids of the
// jobs it moved. None runs sql statements.
StatusOr<std::set<int64_t>> MoveFinishedJobs(Conn& c, const std::vector<FinishRequest>& finishes);

// Sets each inbox row's status from its jobs (SettledStatus), processed at the time given for
// the row (inbox id -> finish time). The rows are locked first, in id order, in a statement of
// their own, so that the jobs are read as of after any concurrent settle of them committed.
Status SettleRows(Conn& c, const std::map<int64_t, std::string>& rows);

}  // namespace hookbox::pg
