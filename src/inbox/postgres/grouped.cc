// PostgreSQL's grouped accept (see grouped.h): a group's events as numbered rows of one
// statement.
#include "inbox/postgres/grouped.h"

#include <nlohmann/json.hpp>

#include "base/status_macros.h"
#include "inbox/backend.h"
#include "inbox/sql_inbox.h"

namespace hookbox::pg {

StatusOr<std::set<std::pair<std::string, std::string>>> InsertEvents(
    Conn& c, const std::vector<const Event*>& events) {
  // Each event is 13 parameters: its row's 12, then its handlers as a JSON array.
  Params params;
  std::string rows, input;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = *events[i];
    params.Add(e.endpoint).Add(e.event_id).Add(e.id_source).Add(e.event_type).Add(e.resource_id);
    params.Add(e.sequence).Add(e.sequence_key).Add(e.body_sha256).Add(e.headers_json);
    params.AddBytes(e.body).Add(e.handlers.empty() ? "ignored" : "pending");
    params.Add(FormatTime(e.received_at)).Add(JsonText(e.handlers));
    const size_t k = i * 13;
    auto at = [&](int n) { return "$" + std::to_string(k + n); };
    rows += std::string(i ? "," : "") + "(";
    for (int n = 1; n <= 12; ++n) rows += (n > 1 ? ", " : "") + at(n);
    rows += ")";
    input += std::string(i ? "," : "") + "(" + at(1) + "::text, " + at(2) + "::text, " + at(12) +
             "::timestamptz, " + at(13) + "::jsonb)";
  }
  ASSIGN_OR_RETURN(
      Result ins,
      c.Exec(std::string("WITH row AS (") + kInsertEvent + " VALUES " + rows +
                 " ON CONFLICT (endpoint, event_id) DO NOTHING"
                 " RETURNING id, endpoint, event_id),"
                 " input (endpoint, event_id, received_at, handlers) AS (VALUES " +
                 input +
                 "),"
                 " jobs AS (" +
                 kInsertJobs +
                 " SELECT row.id, t.h, 'pending',"
                 " input.received_at, false FROM row JOIN input"
                 " USING (endpoint, event_id),"
                 " jsonb_array_elements_text(input.handlers) WITH ORDINALITY AS t (h, n)"
                 " ORDER BY row.id, t.n)"
                 " SELECT endpoint, event_id FROM row",
             params));
  std::set<std::pair<std::string, std::string>> stored;
  for (int i = 0; i < ins.rows(); ++i) stored.emplace(ins.Text(i, 0), ins.Text(i, 1));
  return stored;
}

}  // namespace hookbox::pg
