// ASCII case folding, the one used wherever a name is compared without regard to case:
// header names (the Headers map, the request parser, the listener's answers, the http
// handler), host names, the values HTTP defines as case-insensitive tokens ("chunked",
// "close") and SQL keywords. Only A-Z fold; every other byte, UTF-8 included, is itself.
#pragma once

#include <algorithm>
#include <string_view>

namespace hookbox {

// `c` with A-Z as a-z.
constexpr char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// Whether `a` and `b` are the same bytes once A-Z are folded to a-z.
constexpr bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return AsciiLower(x) == AsciiLower(y);
         });
}

}  // namespace hookbox
