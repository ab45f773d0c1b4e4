// The small value syntaxes of config.yaml — durations ("10s"), sizes ("1MiB") and listen
// addresses ("127.0.0.1:8080", "[::1]:8080") — parsed strictly: whole numbers, an explicit
// unit, no signs, no silent overflow. A typo in a timeout should stop check-config, not turn
// into a surprising value. Messages quote the text and show the accepted form, so the loader
// only has to put "where:" in front.

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/config.h"

namespace hookbox {
namespace {

struct Unit {
  std::string_view name;
  uint64_t scale;
};

// Durations in milliseconds, largest first (FormatDuration picks the largest exact one).
constexpr Unit kDurationUnits[] = {
    {"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}, {"ms", 1}};

constexpr Unit kSizeUnits[] = {{"", 1},
                               {"B", 1},
                               {"KiB", 1ULL << 10},
                               {"MiB", 1ULL << 20},
                               {"GiB", 1ULL << 30},
                               {"KB", 1'000},
                               {"MB", 1'000'000},
                               {"GB", 1'000'000'000}};

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

// Splits "<digits><unit>" and returns digits * unit.scale; nullopt when the digits are
// missing, the unit is not in `units`, or the product overflows `limit`.
std::optional<uint64_t> NumberWithUnit(std::string_view text, std::span<const Unit> units,
                                       uint64_t limit) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  uint64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc()) return std::nullopt;
  std::string_view unit = text.substr(digits);
  for (const Unit& u : units) {
    if (u.name != unit) continue;
    if (number > limit / u.scale) return std::nullopt;
    return number * u.scale;
  }
  return std::nullopt;
}

bool AllDigits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

StatusOr<Duration> ParseDuration(std::string_view text) {
  if (AllDigits(text)) {
    return Status::InvalidArgument(Quoted(text) +
                                   " is not a duration: add a unit (ms, s, m, h or d)");
  }
  auto ms = NumberWithUnit(text, kDurationUnits,
                           static_cast<uint64_t>(std::numeric_limits<Duration::rep>::max()));
  if (!ms) {
    return Status::InvalidArgument(Quoted(text) +
                                   " is not a duration (use e.g. 300ms, 10s, 5m, 2h, 7d)");
  }
  return Duration(static_cast<Duration::rep>(*ms));
}

StatusOr<double> ParseRate(std::string_view text) {
  const size_t slash = text.find('/');
  const std::string_view count = text.substr(0, slash);
  const std::string_view unit = slash == std::string_view::npos ? "" : text.substr(slash + 1);
  const double per = unit == "s" ? 1 : unit == "min" ? 60 : 0;
  // At most 9 digits: no overflow, and far past the cap below anyway.
  if (per == 0 || !AllDigits(count) || count.size() > 9) {
    return Status::InvalidArgument(Quoted(text) +
                                   " is not a rate (use a whole number per s or per min, e.g. "
                                   "20/s or 600/min)");
  }
  const double n = std::stod(std::string(count));
  if (n < 1) {
    return Status::InvalidArgument(Quoted(text) +
                                   " would never run the handler: pause it instead (hookbox "
                                   "handler pause), or give at least 1/min");
  }
  if (n / per > kMaxRatePerSecond) {
    return Status::InvalidArgument(Quoted(text) +
                                   " is more than 100000/s; leave rate out for no "
                                   "limit");
  }
  return n / per;
}

StatusOr<size_t> ParseSize(std::string_view text) {
  auto bytes = NumberWithUnit(text, kSizeUnits, std::numeric_limits<size_t>::max());
  if (!bytes)
    return Status::InvalidArgument(Quoted(text) + " is not a size (use e.g. 64KiB, 1MiB)");
  return static_cast<size_t>(*bytes);
}

StatusOr<HostPort> ParseHostPort(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(Quoted(text) + " is not host:port (" + std::string(why) + ")");
  };
  std::string_view host, port;
  if (text.starts_with('[')) {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("missing \"]\"");
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.starts_with(':')) return bad("missing :port after \"]\"");
    port = rest.substr(1);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("missing :port");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return bad("put an IPv6 address in brackets, e.g. [::1]:8080");
    }
  }
  if (host.empty()) return bad("the host is empty; use e.g. 0.0.0.0 for every interface");
  int number = -1;
  if (AllDigits(port) && port.size() <= 5) {
    std::from_chars(port.data(), port.data() + port.size(), number);
  }
  if (number < 0 || number > 65535) return bad("the port must be 0..65535");
  return HostPort{std::string(host), number};
}

std::string FormatDuration(Duration d) {
  auto ms = static_cast<uint64_t>(d.count() < 0 ? 0 : d.count());
  for (const Unit& u : kDurationUnits) {
    if (ms != 0 && ms % u.scale == 0) return std::to_string(ms / u.scale) + std::string(u.name);
  }
  return "0s";
}

}  // namespace hookbox
