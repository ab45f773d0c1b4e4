// The client's address behind trusted proxies, and the allow-list check (receive/allow.h).
#include "receive/allow.h"

#include <optional>
#include <vector>

#include "base/ip_range.h"

namespace hookbox {
namespace {

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Every X-Forwarded-For entry, in order: the headers as they came (a proxy may add its own
// line rather than extend the last), each split at its commas.
std::vector<std::string_view> ForwardedFor(const Headers& headers) {
  std::vector<std::string_view> entries;
  auto [from, to] = headers.equal_range("X-Forwarded-For");
  for (auto it = from; it != to; ++it) {
    std::string_view rest = it->second;
    while (true) {
      const size_t comma = rest.find(',');
      entries.push_back(Trimmed(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return entries;
}

bool Trusted(const Config& config, std::string_view address) {
  const std::optional<IpAddress> ip = ParseIpAddress(address);
  return ip && InAnyRange(config.trusted_proxies, *ip);
}

}  // namespace

Client ClientOf(const Config& config, const Delivery& d) {
  if (config.trusted_proxies.empty() || !Trusted(config, d.peer)) return Client{d.peer, false};
  const std::vector<std::string_view> entries = ForwardedFor(d.headers);
  // Right to left, past the trusted proxies; every entry trusted: the leftmost is the client.
  for (size_t i = entries.size(); i-- > 0;) {
    if (i == 0 || !Trusted(config, entries[i])) return Client{std::string(entries[i]), true};
  }
  return Client{d.peer, false};  // a trusted proxy that forwarded no address
}

bool AllowedFrom(const Endpoint& endpoint, const Client& client) {
  if (!endpoint.allow_from) return true;
  const std::optional<IpAddress> ip = ParseIpAddress(client.address);
  return ip && InAnyRange(*endpoint.allow_from, *ip);
}

}  // namespace hookbox
