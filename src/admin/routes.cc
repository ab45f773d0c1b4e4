// The admin listener's route table and its dispatch (see routes.h).
#include "admin/routes.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ops/daemon_metrics.h"

namespace hookbox::admin {
namespace {

using nlohmann::json;

bool IsConsole(Auth auth) {
  return auth == Auth::kConsoleOpen || auth == Auth::kConsole || auth == Auth::kConsoleForm;
}

bool NeedsToken(Auth auth) {
  return auth == Auth::kToken || auth == Auth::kConsole || auth == Auth::kConsoleForm;
}

bool Takes(const Route& r, const std::string& method) {
  return r.methods.empty() ||
         std::find(r.methods.begin(), r.methods.end(), method) != r.methods.end();
}

Answer JsonError(int status, const char* body) { return {status, body, {}}; }

Answer WrongHost(Auth auth) {
  if (IsConsole(auth)) return console::WrongHostPage();
  return JsonError(403,
                   R"({"error":"wrong Host: the admin listener answers only to its own address or )"
                   R"(a name in admin_hosts"})");
}

Answer Unauthorized(Auth auth, const Delivery& d) {
  if (IsConsole(auth)) return console::SignInPage(d);
  return {401, R"({"error":"admin token required"})", {{"WWW-Authenticate", "Bearer"}}};
}

// Allow: the methods of the path's rows, in the table's order.
Answer NotAllowed(const std::vector<const Route*>& rows) {
  std::string allow;
  for (const Route* r : rows) {
    for (const std::string& m : r->methods) allow += (allow.empty() ? "" : ", ") + m;
  }
  if (IsConsole(rows.front()->auth)) return console::NotAllowedPage(allow);
  Answer a = JsonError(405, R"({"error":"method not allowed"})");
  a.headers.emplace("Allow", allow);
  return a;
}

Answer Healthy(const Delivery&) { return {200, R"({"status":"ok"})", {}}; }

Answer Ready(const std::function<std::string()>& ready_problem) {
  const std::string problem = ready_problem();
  if (!problem.empty()) {
    return {
        503, json{{"status", problem}}.dump(-1, ' ', false, json::error_handler_t::replace), {}};
  }
  return {200, R"({"status":"ready"})", {}};
}

Answer MetricsText(const Delivery&) {
  return {200,
          Metrics().registry.Render(),
          {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}}};
}

}  // namespace

RouteTable::RouteTable(std::vector<Route> routes, const console::Guards& guards)
    : routes_(std::move(routes)), guards_(guards) {}

Answer RouteTable::Dispatch(const Delivery& d) const {
  std::vector<const Route*> rows;
  for (const Route& r : routes_) {
    if (r.path == d.path) rows.push_back(&r);
  }
  if (rows.empty()) {
    if (!guards_.HostAllowed(d)) return WrongHost(Auth::kOpen);
    return JsonError(404, R"({"error":"not found"})");
  }
  const auto taker =
      std::find_if(rows.begin(), rows.end(), [&](const Route* r) { return Takes(*r, d.method); });
  // A method no row takes is still asked for the path's guards first (its first row's).
  const Route& row = taker == rows.end() ? *rows.front() : **taker;
  if (!guards_.HostAllowed(d)) return WrongHost(row.auth);
  if (NeedsToken(row.auth) && !guards_.Authorized(d)) return Unauthorized(row.auth, d);
  if (taker == rows.end()) return NotAllowed(rows);
  if (row.auth == Auth::kConsoleForm) {
    if (auto refused = guards_.RefusedPost(d, ParseUrlEncoded(d.body), row.form)) {
      return console::RefusedPage(*refused);
    }
  }
  return row.answer(d);
}

std::vector<Route> AdminRoutes(std::function<std::string()> ready_problem,
                               console::Console& console) {
  const std::vector<std::string> get = {"GET", "HEAD"};
  const std::vector<std::string> post = {"POST"};
  auto page = [&console](Answer (console::Console::*handler)(const Delivery&)) {
    return [&console, handler](const Delivery& d) { return (console.*handler)(d); };
  };
  auto event = [&console](bool retry) {
    return [&console, retry](const Delivery& d) { return console.EventAction(d, retry); };
  };
  auto handler = [&console](bool pause) {
    return [&console, pause](const Delivery& d) { return console.HandlerAction(d, pause); };
  };
  using console::Console;
  using console::FormToken;
  return {
      // The probes and the metrics take every method, as they always have.
      {"/healthz", {}, Auth::kOpen, Healthy},
      {"/readyz",
       {},
       Auth::kOpen,
       [ready_problem = std::move(ready_problem)](const Delivery&) {
         return Ready(ready_problem);
       }},
      {"/metrics", {}, Auth::kToken, MetricsText},
      // The console. Its style sheet and login are open to anyone naming the listener; the
      // login takes every method (without a token it sends each to the list).
      {"/style.css", get, Auth::kConsoleOpen,
       [](const Delivery&) { return Console::StyleSheet(); }},
      {"/login", {}, Auth::kConsoleOpen, page(&Console::Login)},
      {"/", get, Auth::kConsole, page(&Console::ListPage)},
      {"/event", get, Auth::kConsole, page(&Console::EventPage)},
      {"/dead", get, Auth::kConsole, page(&Console::DeadPage)},
      {"/handlers", get, Auth::kConsole, page(&Console::HandlersPage)},
      {"/bulk", get, Auth::kConsole, page(&Console::BulkPage)},
      {"/bulk", post, Auth::kConsoleForm, page(&Console::BulkAction), FormToken::kBulk},
      {"/event/retry", post, Auth::kConsoleForm, event(true), FormToken::kEvent},
      {"/event/clear", post, Auth::kConsoleForm, event(false), FormToken::kEvent},
      {"/handler/pause", post, Auth::kConsoleForm, handler(true), FormToken::kHandler},
      {"/handler/resume", post, Auth::kConsoleForm, handler(false), FormToken::kHandler},
  };
}

}  // namespace hookbox::admin
