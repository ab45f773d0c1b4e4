// The operator's console: the inbox in a browser, on the admin listener (never the public
// port), served by the daemon itself with every asset inside the binary.
//
// Pages (GET): `/` the inbox, newest first, with filters and keyset paging, and the numbers
// an on-call person looks at first; `/event?endpoint=E&id=I` one event with its headers,
// body, jobs and attempts; `/dead` the dead letters; `/bulk` the plan of a bulk retry or
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
// - a Host that does not name the listener with its port gets 403 (DNS rebinding), on every
//   path of the admin listener (serve.cc asks HostAllowed first): see HostAllowed;
// - actions need a CSRF token tied to the event (an HMAC, under a key made at start, of the
//   endpoint and id) and, when the browser sends one, an Origin equal to the listener's;
//   otherwise 403 and nothing changes;
// - with `admin_token`, every page and action (and /metrics, see Authorized) needs the
//   token: `Authorization: Bearer` for scripts, or the HttpOnly, SameSite=Strict cookie
//   that the login form sets (an HMAC of the token, so it changes when the token does).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/delivery.h"
#include "base/form.h"
#include "inbox/inbox.h"

namespace hookbox::console {

struct ConsoleOptions {
  std::vector<std::string> endpoints;  // the config's endpoint names, for the filter
  std::vector<std::string> hosts;      // admin_hosts
  std::string token;                   // admin_token's value; "" = no token
  std::function<void()> wake;          // after a retry: wake the dispatcher
  // The handlers page: the config's worker-pool handlers (sync endpoints' have no queue
  // to pause), with their `rate:` as written ("" = none).
  struct PoolHandler {
    std::string endpoint, handler, rate;
  };
  std::vector<PoolHandler> handlers;
};

class Console {
 public:
  Console(Inbox& inbox, ConsoleOptions options);

  // The admin listener's address as configured (`admin_listen`'s host) and its bound port,
  // which Host must name.
  void SetListener(std::string host, int port);

  // The console's answer, or nullopt when the path is not the console's.
  std::optional<Answer> Handle(const Delivery& d);

  // True when no token is set, or d carries it (Bearer) or the login cookie.
  bool Authorized(const Delivery& d) const;

  // True when d has one Host and it names this listener, with the bound port (absent: 80):
  // an `admin_hosts` name; the listener's own IP address; when it is bound to loopback (or
  // `localhost`), also `localhost`, 127.0.0.1 and [::1]; when bound to 0.0.0.0 or [::], an
  // address of one of this machine's interfaces (`localhost` then too). Any other IP literal
  // or name is refused: a DNS-rebinding page's requests carry its own name (issue 26).
  // Also true when d has no Host at all (HTTP/1.0: the parser refuses HTTP/1.1 without
  // one), which no browser sends; an empty Host, or two, is refused.
  bool HostAllowed(const Delivery& d) const;

 private:
  std::optional<Answer> RefusedPost(const Delivery& d, const FormFields& form) const;
  std::string HandlerToken(const std::string& endpoint, const std::string& handler) const;
  std::string CsrfToken(const std::string& endpoint, const std::string& id) const;
  std::string BulkCsrfToken() const;  // the bulk form's: not tied to one event
  std::string SessionCookieValue() const;

  StatusOr<std::vector<InboxRow>> Rows(const ListFilter& f);
  Answer Login(const Delivery& d);
  Answer ListPage(const FormFields& query);
  Answer EventPage(const FormFields& query);
  Answer DeadPage(const FormFields& query);
  Answer Action(const Delivery& d);
  Answer HandlersPage(const FormFields& query);
  Answer HandlerAction(const Delivery& d);
  Answer BulkPage(const FormFields& query);
  Answer BulkAction(const Delivery& d);

  Inbox& inbox_;
  const ConsoleOptions options_;
  const std::string csrf_key_;
  std::atomic<int> port_{0};
  // Set by SetListener before the admin listener's threads start, and read-only after: the
  // host as configured, the bytes of its IP (nullopt for a name), and what it is bound to.
  std::string listen_host_;
  std::optional<std::string> listen_ip_;
  bool bound_loopback_ = false, bound_wildcard_ = false;
};

}  // namespace hookbox::console
