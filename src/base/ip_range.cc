// Parsing and matching of IP ranges (base/ip_range.h). The address itself is inet_pton's;
// this file adds the prefix, the IPv4-mapped form and the containment test.
#include "base/ip_range.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace hookbox {
namespace {

constexpr int kMappedPrefix = 96;  // ::ffff:0:0/96 holds IPv4

// The address of `text` and whether it was written as IPv4.
std::optional<std::pair<IpAddress, bool>> ParseWithFamily(std::string_view text) {
  if (const size_t zone = text.find('%'); zone != std::string_view::npos) {
    text = text.substr(0, zone);
  }
  if (text.empty() || text.size() > 45) return std::nullopt;  // INET6_ADDRSTRLEN - 1
  const std::string z(text);                                  // inet_pton wants a C string
  IpAddress out{};
  if (text.find(':') == std::string_view::npos) {
    uint8_t v4[4];
    if (inet_pton(AF_INET, z.c_str(), v4) != 1) return std::nullopt;
    out[10] = 0xff;
    out[11] = 0xff;
    std::copy(v4, v4 + 4, out.begin() + 12);
    return std::make_pair(out, true);
  }
  if (inet_pton(AF_INET6, z.c_str(), out.data()) != 1) return std::nullopt;
  return std::make_pair(out, false);
}

}  // namespace

std::optional<IpAddress> ParseIpAddress(std::string_view text) {
  auto parsed = ParseWithFamily(text);
  if (!parsed) return std::nullopt;
  return parsed->first;
}

bool IpRange::Contains(const IpAddress& address) const {
  const int whole = prefix / 8;
  if (!std::equal(network.begin(), network.begin() + whole, address.begin())) return false;
  const int rest = prefix % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (address[whole] & mask) == network[whole];
}

StatusOr<IpRange> ParseIpRange(std::string_view text) {
  const std::string shown(text);
  const size_t slash = text.find('/');
  auto parsed = ParseWithFamily(text.substr(0, slash));
  if (!parsed || text.find('%') != std::string_view::npos) {
    return Status::InvalidArgument("\"" + shown +
                                   "\" is not an IP address or range (e.g. 192.0.2.0/24, "
                                   "2001:db8::/32)");
  }
  const auto& [address, v4] = *parsed;
  const int width = v4 ? 32 : 128;
  int bits = width;
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || bits < 0 ||
        bits > width) {
      return Status::InvalidArgument("\"" + shown + "\": the prefix length must be 0 to " +
                                     std::to_string(width));
    }
  }
  IpRange range{address, (v4 ? kMappedPrefix : 0) + bits, shown};
  IpAddress masked = address;
  for (int i = range.prefix; i < 128; ++i) {
    masked[i / 8] = static_cast<uint8_t>(masked[i / 8] & ~(0x80 >> (i % 8)));
  }
  if (masked != address) {
    return Status::InvalidArgument("\"" + shown +
                                   "\" has bits set past its prefix length; write the network "
                                   "address it means");
  }
  return range;
}

bool InAnyRange(const std::vector<IpRange>& ranges, const IpAddress& address) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const IpRange& r) { return r.Contains(address); });
}

}  // namespace hookbox
