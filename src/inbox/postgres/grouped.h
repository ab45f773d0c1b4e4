// PostgreSQL's grouped accept: many simple accepts in one statement, so that a group costs one
// round trip and one commit (postgres_inbox.cc decides when a group applies, and what follows
// it: a duplicate's count). (Finishes are grouped once for both dialects: SqlInbox::FinishJobs.)
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "inbox/inbox.h"
#include "inbox/postgres/pg.h"

namespace hookbox::pg {

// Inserts the rows of `events` and their jobs, in the order given, in one statement with ON
// CONFLICT DO NOTHING (a row already stored, or stored by a concurrent statement, is
// skipped): the (endpoint, event_id) of the rows it inserted. `events` names each
// (endpoint, event_id) once, and holds no event with a resource, a sync owner or body dedupe.
// Outside a transaction it is one: on failure nothing was stored.
StatusOr<std::set<std::pair<std::string, std::string>>> InsertEvents(
    Conn& c, const std::vector<const Event*>& events);

}  // namespace hookbox::pg
