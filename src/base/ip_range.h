// IP addresses and ranges (CIDR) for the allow lists (an endpoint's `allow_from:`, the
// top-level `trusted_proxies:`): parsing, with inet_pton doing the address itself, and
// matching. IPv4 is held as IPv4-mapped IPv6 (::ffff:a.b.c.d), so an IPv4 range matches a
// client whether a dual-stack listener saw it as 192.0.2.1 or as ::ffff:192.0.2.1.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hookbox {

using IpAddress = std::array<uint8_t, 16>;

// "192.0.2.1", "2001:db8::1", "::ffff:192.0.2.1"; a zone ("fe80::1%eth0") is dropped.
// nullopt for anything else (a host name, a port, brackets, spaces).
std::optional<IpAddress> ParseIpAddress(std::string_view text);

struct IpRange {
  IpAddress network{};  // the bits past the prefix are zero
  int prefix = 128;     // of the 128 bits (an IPv4 /24 is 96 + 24)
  std::string text;     // as written, for messages

  bool Contains(const IpAddress& address) const;
};

// "10.0.0.0/8", "2001:db8::/32", or one address ("192.0.2.1" is /32, "::1" is /128). A
// range whose address has bits set past its prefix ("10.1.0.0/8") is refused: it is most
// likely a typo, and reading it as 10.0.0.0/8 would allow more than its writer meant.
StatusOr<IpRange> ParseIpRange(std::string_view text);

// True when `address` is in one of `ranges`.
bool InAnyRange(const std::vector<IpRange>& ranges, const IpAddress& address);

}  // namespace hookbox
