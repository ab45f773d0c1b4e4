// The admin listener (`admin_listen`) as one route table: every path it answers, the methods
// each takes, who may reach it, and what answers it. `/healthz`, `/readyz`, `/metrics` and
// the console's pages and actions are all rows (AdminRoutes); RouteTable::Dispatch is the one
// dispatch, and the guards it asks are console/guards.h.
//
// Dispatch, in this order (each step's refusal is the answer):
//   1. the path: no row has it → 404 (after the Host check: a foreign Host learns nothing);
//   2. Host (every row; docs/SECURITY.md rows 69, 121) → 403;
//   3. the token, for rows that need it → 401; asked before the method, so a stranger learns
//      no more of a console path than that it needs the token;
//   4. the method: none of the path's rows takes it → 405 with Allow (their methods);
//   5. for a form row, Origin, Sec-Fetch-Site and the form's CSRF token → 403;
//   6. the row's handler.
// Refusals on the probes' and /metrics' rows (and on unknown paths) are JSON, as every other
// answer there; on the console's rows they are its pages.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/delivery.h"
#include "console/console.h"
#include "console/guards.h"

namespace hookbox::admin {

// Who may reach a row, beyond the Host check every row has.
enum class Auth {
  kOpen,         // anyone naming the listener; refusals in JSON (the probes: they tell little)
  kToken,        // admin_token (Bearer or the login cookie); refusals in JSON (/metrics)
  kConsoleOpen,  // anyone naming the listener; refusals as pages (the style sheet, the login)
  kConsole,      // admin_token; refusals as pages, the login page for a GET
  kConsoleForm,  // kConsole, and a POST from this listener's page with the form's CSRF token
};

struct Route {
  std::string path;                  // exact: the admin listener has no prefix routes
  std::vector<std::string> methods;  // empty: every method, and the handler decides
  Auth auth = Auth::kConsole;
  std::function<Answer(const Delivery&)> answer;
  console::FormToken form = console::FormToken::kNone;  // kConsoleForm: its CSRF token's kind
};

// Thread-safe: the table does not change after construction, and the guards and handlers are
// safe to share.
class RouteTable {
 public:
  // A path may have several rows (one per set of methods: /bulk's GET and POST); its rows
  // must agree on whether their refusals are JSON or pages.
  RouteTable(std::vector<Route> routes, const console::Guards& guards);

  Answer Dispatch(const Delivery& d) const;

  const std::vector<Route>& routes() const { return routes_; }

 private:
  const std::vector<Route> routes_;
  const console::Guards& guards_;
};

// The admin listener's rows. `ready_problem`: "" while the daemon is ready, else what
// /readyz answers 503 with.
std::vector<Route> AdminRoutes(std::function<std::string()> ready_problem,
                               console::Console& console);

}  // namespace hookbox::admin
