// The admin listener's guards: Host, token, Origin and CSRF (see guards.h).
#include "console/guards.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>

#include "base/ascii.h"
#include "base/crypto.h"

namespace hookbox::console {
namespace {

constexpr const char* kSessionCookie = "hookbox_session";

// An IP address in one comparable form: v4 as its 4 bytes, v6 as its 16 (a v4-mapped v6
// address as the v4 one). nullopt for anything that is not an IP literal.
std::optional<std::string> IpBytes(const std::string& text) {
  in_addr a4{};
  if (inet_pton(AF_INET, text.c_str(), &a4) == 1) {
    return std::string(reinterpret_cast<const char*>(&a4), sizeof a4);
  }
  in6_addr a6{};
  if (inet_pton(AF_INET6, text.c_str(), &a6) != 1) return std::nullopt;
  if (IN6_IS_ADDR_V4MAPPED(&a6)) return std::string(reinterpret_cast<const char*>(&a6) + 12, 4);
  return std::string(reinterpret_cast<const char*>(&a6), sizeof a6);
}

bool IsLoopback(const std::string& bytes) {
  static const std::string kV6Loopback = *IpBytes("::1");
  return (bytes.size() == 4 && bytes[0] == 127) || bytes == kV6Loopback;
}

bool IsWildcard(const std::string& bytes) {
  return bytes.find_first_not_of('\0') == std::string::npos;
}

// Whether `ip` is an address of one of this machine's interfaces: what a listener bound to
// 0.0.0.0 or [::] answers on. Asked at each request, as interfaces come and go.
bool IsLocalAddress(const std::string& ip) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (const ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      found = ip == std::string(reinterpret_cast<const char*>(&a->sin_addr), 4);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      found = ip == std::string(reinterpret_cast<const char*>(&a->sin6_addr), 16);
    }
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

Guards::Guards(std::vector<std::string> hosts, std::string token, std::string csrf_key)
    : hosts_(std::move(hosts)), token_(std::move(token)), csrf_key_(std::move(csrf_key)) {}

bool Guards::HostAllowed(const Delivery& d) const {
  // No Host at all: only HTTP/1.0 may leave it out (the parser answers an HTTP/1.1 request
  // without one 400), and no browser does, so no DNS-rebinding page can send this. An old
  // load balancer's or `nc` health probe can, and must pass (docs/SECURITY.md row 126).
  const size_t hosts = HeaderCount(d.headers, "Host");
  if (hosts == 0) return true;
  if (hosts != 1) return false;
  std::string_view host = *HeaderValue(d.headers, "Host");
  std::string name;
  std::string_view rest;
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = std::string(host.substr(1, close - 1));
    rest = host.substr(close + 1);
    // Only a v6 literal goes in brackets.
    in6_addr a6{};
    if (inet_pton(AF_INET6, name.c_str(), &a6) != 1) return false;
  } else {
    const size_t colon = host.rfind(':');
    name = std::string(host.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : host.substr(colon);
  }
  int64_t port = 80;
  if (!rest.empty()) {
    auto n = rest.starts_with(':') ? ParseAsciiDigits(rest.substr(1)) : std::nullopt;
    if (!n) return false;
    port = *n;
  }
  if (port != port_) return false;
  if (std::any_of(hosts_.begin(), hosts_.end(),
                  [&](const std::string& h) { return EqualsIgnoringAsciiCase(h, name); })) {
    return true;
  }
  // The listener's own address: the name admin_listen gives, or the bytes its IP stands for.
  if (!listen_ip_ && EqualsIgnoringAsciiCase(name, listen_host_)) return true;
  if (EqualsIgnoringAsciiCase(name, "localhost")) return bound_loopback_ || bound_wildcard_;
  const std::optional<std::string> ip = IpBytes(name);
  // A name not listed in admin_hosts, or 0.0.0.0 (which a browser may send to a local port).
  if (!ip || IsWildcard(*ip)) return false;
  if (listen_ip_ && *ip == *listen_ip_) return true;
  static const std::string kV4Loopback = *IpBytes("127.0.0.1");
  if (bound_loopback_) return IsLoopback(*ip) && (ip->size() == 16 || *ip == kV4Loopback);
  return bound_wildcard_ && IsLocalAddress(*ip);
}

void Guards::SetListener(std::string host, int port) {
  listen_host_ = std::move(host);
  listen_ip_ = IpBytes(listen_host_);
  bound_loopback_ =
      EqualsIgnoringAsciiCase(listen_host_, "localhost") || (listen_ip_ && IsLoopback(*listen_ip_));
  bound_wildcard_ = listen_ip_ && IsWildcard(*listen_ip_);
  port_ = port;
}

bool Guards::Authorized(const Delivery& d) const {
  if (token_.empty()) return true;
  if (auto auth = HeaderValue(d.headers, "Authorization"); auth && auth->starts_with("Bearer ")) {
    return ConstantTimeEqual(auth->substr(7), token_);
  }
  const std::string session = SessionCookieValue();
  auto [from, to] = d.headers.equal_range("Cookie");
  for (auto it = from; it != to; ++it) {
    std::string_view cookies = it->second;
    while (!cookies.empty()) {
      const size_t semi = cookies.find(';');
      std::string_view pair = cookies.substr(0, semi);
      cookies = semi == std::string_view::npos ? std::string_view() : cookies.substr(semi + 1);
      while (pair.starts_with(' ')) pair.remove_prefix(1);
      const size_t eq = pair.find('=');
      if (eq != std::string_view::npos && pair.substr(0, eq) == kSessionCookie &&
          ConstantTimeEqual(pair.substr(eq + 1), session)) {
        return true;
      }
    }
  }
  return false;
}

// A POST from another site: an Origin (or Sec-Fetch-Site) that is not this listener's, or,
// for the actions, a missing or wrong CSRF token. nullopt when the request may go on.
std::optional<std::string> Guards::RefusedPost(const Delivery& d, const FormFields& form,
                                               FormToken token) const {
  const std::string host(HeaderValue(d.headers, "Host").value_or(""));
  if (auto origin = HeaderValue(d.headers, "Origin")) {
    if (!EqualsIgnoringAsciiCase(*origin, "http://" + host) &&
        !EqualsIgnoringAsciiCase(*origin, "https://" + host)) {
      return "This request came from another site.";
    }
  }
  if (auto site = HeaderValue(d.headers, "Sec-Fetch-Site");
      site && *site != "same-origin" && *site != "none") {
    return "This request came from another site.";
  }
  if (token == FormToken::kNone) return std::nullopt;
  // A handler's forms carry its name as `id`, as an event's carry the event's id.
  const std::string expected = token == FormToken::kBulk ? BulkCsrfToken()
                               : token == FormToken::kHandler
                                   ? HandlerToken(FormText(form, "endpoint"), FormText(form, "id"))
                                   : CsrfToken(FormText(form, "endpoint"), FormText(form, "id"));
  if (!ConstantTimeEqual(FormText(form, "csrf"), expected)) {
    return std::string(
        "The form's token is missing or out of date (the daemon may have "
        "restarted): open the event's page again and repeat.");
  }
  return std::nullopt;
}

std::string Guards::CsrfToken(const std::string& endpoint, const std::string& id) const {
  std::string message = "csrf";
  message += '\0' + endpoint + '\0' + id;
  return HexEncode(Hmac(HashAlgorithm::kSha256, csrf_key_, message));
}

std::string Guards::HandlerToken(const std::string& endpoint, const std::string& handler) const {
  return CsrfToken(endpoint, std::string("\x1fhandler\x1f") + handler);
}

std::string Guards::BulkCsrfToken() const {
  return HexEncode(Hmac(HashAlgorithm::kSha256, csrf_key_, std::string("csrf-bulk")));
}

std::string Guards::SessionCookieValue() const {
  return HexEncode(Hmac(HashAlgorithm::kSha256, token_, "hookbox console session"));
}

bool Guards::IsToken(const std::string& text) const { return ConstantTimeEqual(text, token_); }

std::string Guards::SessionSetCookie() const {
  return std::string(kSessionCookie) + "=" + SessionCookieValue() +
         "; Path=/; HttpOnly; SameSite=Strict";
}

}  // namespace hookbox::console
