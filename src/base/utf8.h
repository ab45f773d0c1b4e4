// A strict UTF-8 decoder (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF), for every layer that must tell well-formed text from bytes: the terminal
// escaping of the CLI (ops/terminal.cc), the text PostgreSQL stores (inbox/postgres) and
// the console's pages (console/).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hookbox {

// The code point of the well-formed UTF-8 sequence at the start of `s` and its length, or
// length 0 when it is not one (overlong, surrogate, past U+10FFFF, cut short, empty).
struct Decoded {
  char32_t cp = 0;
  size_t length = 0;
};

inline Decoded DecodeOne(std::string_view s) {
  if (s.empty()) return {};
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return {b0, 1};
  size_t n;
  char32_t cp, min;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2, cp = b0 & 0x1f, min = 0x80;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3, cp = b0 & 0x0f, min = 0x800;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return {};
  }
  if (s.size() < n) return {};
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return {};
    cp = (cp << 6) | (byte(i) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {};
  return {cp, n};
}

// Whether `s` is well-formed UTF-8 without NUL: text PostgreSQL's TEXT takes as it is (the
// filters and routes' conditions refuse anything else, so that both backends agree).
inline bool IsTextWithoutNul(std::string_view s) {
  while (!s.empty()) {
    const Decoded d = DecodeOne(s);
    if (d.length == 0 || d.cp == 0) return false;
    s.remove_prefix(d.length);
  }
  return true;
}

// `s` as well-formed UTF-8 without NUL: each byte that does not start a well-formed
// sequence, and each NUL, becomes U+FFFD. Text a PostgreSQL TEXT column or a web page can
// take whatever bytes a handler or a producer sent.
inline std::string ToValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const Decoded d = DecodeOne(s);
    if (d.length == 0 || d.cp == 0) {
      out += "\xEF\xBF\xBD";
      s.remove_prefix(1);
    } else {
      out.append(s.substr(0, d.length));
      s.remove_prefix(d.length);
    }
  }
  return out;
}

}  // namespace hookbox
