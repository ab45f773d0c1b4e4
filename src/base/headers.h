// Request headers as plain data: a multimap with case-insensitive names, so verification,
// identification and storage can read headers without knowing the HTTP library. The HTTP
// layer (src/http/) fills it from the parsed request.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/ascii.h"

namespace hookbox {

// The order of header names: byte by byte, unsigned, with A-Z folded as EqualsIgnoringAsciiCase
// folds them (base/ascii.h), so two names are equivalent exactly when that says they are equal.
struct CaseInsensitiveLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
      return static_cast<unsigned char>(AsciiLower(x)) < static_cast<unsigned char>(AsciiLower(y));
    });
  }
};

using Headers = std::multimap<std::string, std::string, CaseInsensitiveLess>;

// The first value of a header, if present. Absent and present-but-empty are different.
inline std::optional<std::string_view> HeaderValue(const Headers& headers, std::string_view name) {
  auto it = headers.find(name);
  if (it == headers.end()) return std::nullopt;
  return std::string_view(it->second);
}

inline size_t HeaderCount(const Headers& headers, std::string_view name) {
  return headers.count(name);
}

}  // namespace hookbox
