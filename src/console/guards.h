// The admin listener's guards, apart from the console's pages: which requests may reach a
// page at all. The route table (admin/routes.h) asks them in order for every request, and
// the pages ask them only for the CSRF tokens they put in their forms and for the login.
//
// - Host (HostAllowed): every path of the admin listener answers only to a Host that names
//   this listener with its port, or to none at all (HTTP/1.0). A DNS-rebinding page's
//   requests carry its own name, so it can read neither the console nor /metrics
//   (docs/SECURITY.md rows 69, 121).
// - Token (Authorized): with `admin_token`, `Authorization: Bearer` for scripts, or the
//   HttpOnly, SameSite=Strict cookie that the login form sets (an HMAC of the token, so it
//   changes when the token does).
// - Origin (RefusedPost): a POST whose Origin or Sec-Fetch-Site is not this listener's.
// - CSRF (RefusedPost): an action's form must carry the token tied to what it acts on (an
//   HMAC, under a key drawn at start, of the endpoint and id; of the handler; or the bulk
//   form's own), so that another site cannot forge one.
//
// Thread-safe once SetListener has been called (before the listener's threads start).
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "base/delivery.h"
#include "base/form.h"

namespace hookbox::console {

// What a form's CSRF token is tied to: the route table names it per row (admin/routes.h).
enum class FormToken {
  kNone,     // none: the login's form, which has no session to forge a request in
  kEvent,    // the event the form acts on (its endpoint and id)
  kHandler,  // the handler it acts on, bound apart from an event's token of the same name
  kBulk,     // the bulk form's, tied to no event
};

class Guards {
 public:
  // `hosts`: admin_hosts; `token`: admin_token's value ("" = none); `csrf_key`: random
  // bytes drawn at start (the daemon's: a restart makes every open form out of date).
  Guards(std::vector<std::string> hosts, std::string token, std::string csrf_key);

  // The admin listener's address as configured (`admin_listen`'s host) and its bound port,
  // which Host must name.
  void SetListener(std::string host, int port);

  // True when d has one Host and it names this listener, with the bound port (absent: 80):
  // an `admin_hosts` name; the listener's own IP address; when it is bound to loopback (or
  // `localhost`), also `localhost`, 127.0.0.1 and [::1]; when bound to 0.0.0.0 or [::], an
  // address of one of this machine's interfaces (`localhost` then too). Any other IP literal
  // or name is refused: a DNS-rebinding page's requests carry its own name (docs/SECURITY.md
  // row 69).
  // Also true when d has no Host at all (HTTP/1.0: the parser refuses HTTP/1.1 without
  // one), which no browser sends; an empty Host, or two, is refused.
  bool HostAllowed(const Delivery& d) const;

  // True when no token is set, or d carries it (Bearer) or the login cookie.
  bool Authorized(const Delivery& d) const;

  // Why a POST is refused: an Origin (or Sec-Fetch-Site) that is not this listener's, or a
  // missing or wrong CSRF token of the kind its route names. nullopt when it may go on.
  std::optional<std::string> RefusedPost(const Delivery& d, const FormFields& form,
                                         FormToken token) const;

  // The tokens the pages put in their forms.
  std::string CsrfToken(const std::string& endpoint, const std::string& id) const;
  std::string HandlerToken(const std::string& endpoint, const std::string& handler) const;
  std::string BulkCsrfToken() const;  // the bulk form's: tied to no event

  // The login form: whether a token is set, whether `text` is it, and the Set-Cookie value
  // of the session it opens.
  bool HasToken() const { return !token_.empty(); }
  bool IsToken(const std::string& text) const;
  std::string SessionSetCookie() const;

 private:
  std::string SessionCookieValue() const;

  const std::vector<std::string> hosts_;
  const std::string token_;
  const std::string csrf_key_;
  std::atomic<int> port_{0};
  // Set by SetListener before the admin listener's threads start, and read-only after: the
  // host as configured, the bytes of its IP (nullopt for a name), and what it is bound to.
  std::string listen_host_;
  std::optional<std::string> listen_ip_;
  bool bound_loopback_ = false, bound_wildcard_ = false;
};

}  // namespace hookbox::console
