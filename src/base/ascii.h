// ASCII case folding, the one used wherever a name is compared without regard to case:
// header names (the Headers map, the request parser, the listener's answers, the http
// handler), host names, the values HTTP defines as case-insensitive tokens ("chunked",
// "close") and SQL keywords. Only A-Z fold; every other byte, UTF-8 included, is itself.
// And ASCII digits read as a number, for the ids and ports a request carries, and a hex digit's
// value (percent-encoding, hex strings, PostgreSQL's bytea).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hookbox {

// `c` with A-Z as a-z.
constexpr char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// The value of the hex digit `c` (0-9, a-f, A-F), or -1 for any other byte.
constexpr int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether `a` and `b` are the same bytes once A-Z are folded to a-z.
constexpr bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return AsciiLower(x) == AsciiLower(y);
         });
}

// A whole non-negative number of 1 to 18 ASCII digits (no sign, no space: it cannot
// overflow), else nullopt.
constexpr std::optional<int64_t> ParseAsciiDigits(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace hookbox
