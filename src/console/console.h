// The operator's console: the inbox in a browser, on the admin listener (never the public
// port), served by the daemon itself with every asset inside the binary.
//
// Pages (GET): `/` the inbox, newest first, with filters and keyset paging, and the numbers
// an on-call person looks at first; `/event?endpoint=E&id=I` one event with its headers,
// body, jobs and attempts; `/dead` the dead letters; `/handlers` the worker-pool handlers
// with their state and a Pause or Resume (a POST each); `/bulk` the plan of a bulk retry or
// replay over a filter (the numbers of `hookbox inbox retry --dead --dry-run`), whose POST
// acts, guarded as the other actions. Actions (POST, each behind a
// confirmation page): `/event/retry` re-arms the event's dead jobs and `/event/clear`
// forgets the row so that the next delivery is processed as new, the same calls as `hookbox
// inbox retry` and `inbox clear`. Nothing bypasses dedupe or marks an event done unrun.
//
// Safe by construction (event ids, headers and bodies are attacker-controlled):
// - escaping happens in one place, the renderer (render.h);
// - every answer carries a strict Content-Security-Policy (no script at all, styles from
//   /style.css only, no framing), nosniff, a same-origin referrer and no-store, as HTTP headers;
// - no page is reached but through the admin listener's route table (admin/routes.h), which
//   asks the guards (guards.h: Host, token, Origin, CSRF) before any page runs; a page asks
//   them only for the tokens it puts in its forms.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/delivery.h"
#include "base/form.h"
#include "console/guards.h"
#include "inbox/handler_states.h"
#include "inbox/inbox_admin.h"

namespace hookbox::console {

struct ConsoleOptions {
  std::vector<std::string> endpoints;  // the config's endpoint names, for the filter
  std::function<void()> wake;          // after a retry: wake the dispatcher
  // The handlers page: the config's worker-pool handlers (sync endpoints' have no queue
  // to pause), with their `rate:` as written ("" = none).
  struct PoolHandler {
    std::string endpoint, handler, rate;
  };
  std::vector<PoolHandler> handlers;
};

// The console's refusals as pages, for the route table's dispatch: a Host that does not name
// the listener (403), no token (401: the login page for GET and HEAD, else a message), a
// method the path does not take (405, with Allow), a POST refused by Origin or CSRF (403).
Answer WrongHostPage();
Answer SignInPage(const Delivery& d);
Answer NotAllowedPage(std::string_view allow);
Answer RefusedPage(std::string_view why);

// The pages and actions. Each is one row (or two) of the admin listener's route table, which
// has already applied the row's guards and method: an action runs only for a POST with the
// token and a good Origin and CSRF token. Thread-safe: the inbox is, and the options are read
// as one snapshot per page or action.
class Console {
 public:
  // The inbox in two of its roles: the operator's reads and verbs, and the handler states
  // the handlers page shows and pauses (one Inbox plays both).
  Console(InboxAdmin& admin, HandlerStates& states, ConsoleOptions options, const Guards& guards);

  // The options of the config a reload installed (SIGHUP): the next page reads them, so the
  // handlers page lists what the dispatcher now runs and an action names only those.
  void Swap(ConsoleOptions options);

  static Answer StyleSheet();       // GET /style.css
  Answer Login(const Delivery& d);  // /login, every method (see console.cc)
  // GET pages; each reads its query.
  Answer ListPage(const Delivery& d);      // /
  Answer EventPage(const Delivery& d);     // /event?endpoint=E&id=I
  Answer DeadPage(const Delivery& d);      // /dead
  Answer HandlersPage(const Delivery& d);  // /handlers
  Answer BulkPage(const Delivery& d);      // /bulk
  // POST actions; each reads its form.
  Answer EventAction(const Delivery& d, bool retry);    // /event/retry, /event/clear
  Answer HandlerAction(const Delivery& d, bool pause);  // /handler/pause, /handler/resume
  Answer BulkAction(const Delivery& d);                 // /bulk

 private:
  StatusOr<std::vector<InboxRow>> Rows(const ListFilter& f);

  std::shared_ptr<const ConsoleOptions> Options() const;

  InboxAdmin& admin_;
  HandlerStates& states_;
  mutable std::mutex mu_;                          // guards options_
  std::shared_ptr<const ConsoleOptions> options_;  // replaced whole by Swap()
  const Guards& guards_;
};

}  // namespace hookbox::console
