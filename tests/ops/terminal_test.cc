// Unit tests of the terminal escaping of untrusted text (src/ops/terminal.h): every control,
// C1, bidi and invisible format character and every byte of invalid UTF-8 comes out as
// visible ASCII; printable UTF-8 stays as it is.
#include "ops/terminal.h"

#include <catch2/catch.hpp>
#include <string>

using hookbox::TerminalSafe;
using hookbox::TerminalSafeText;

namespace {

// True when `s` holds no byte a terminal acts on: no C0 but newline/tab, no DEL, and no
// UTF-8 encoding of a C1 control (C2 80..C2 9F) or of U+202A..U+202E / U+2066..U+2069.
bool InertForTerminal(const std::string& s, bool allow_newlines) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 && !(allow_newlines && (c == '\n' || c == '\t'))) return false;
    if (c == 0x7f) return false;
    if (c == 0xc2 && i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xe0) == 0x80)
      return false;
    if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        static_cast<unsigned char>(s[i + 2]) >= 0xaa &&
        static_cast<unsigned char>(s[i + 2]) <= 0xae)
      return false;
    if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x81 &&
        static_cast<unsigned char>(s[i + 2]) >= 0xa6 &&
        static_cast<unsigned char>(s[i + 2]) <= 0xa9)
      return false;
  }
  return true;
}

}  // namespace

TEST_CASE("plain ASCII and printable UTF-8 are kept as they are") {
  CHECK(TerminalSafe("evt_1 invoice.paid") == "evt_1 invoice.paid");
  CHECK(TerminalSafe("ünïcode 日本語 😀") == "ünïcode 日本語 😀");
  CHECK(TerminalSafeText("{\"a\":\"ünïcode\"}\n\t{\"b\":\"\\n\"}") ==
        "{\"a\":\"ünïcode\"}\n\t{\"b\":\"\\n\"}");
  CHECK(TerminalSafe("") == "");
}

TEST_CASE("C0 controls and DEL become \\xNN") {
  CHECK(TerminalSafe("\x1b]0;pwned\x07\x1b[31mred") == "\\x1b]0;pwned\\x07\\x1b[31mred");
  CHECK(TerminalSafe(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(TerminalSafe("a\rb\nc\td\x7f") == "a\\x0db\\x0ac\\x09d\\x7f");
  // The body form keeps newlines and tabs, nothing else.
  CHECK(TerminalSafeText("a\rb\nc\td\x1b[2J") == "a\\x0db\nc\td\\x1b[2J");
}

TEST_CASE("C1 controls, bidi and invisible format characters become \\uXXXX") {
  CHECK(TerminalSafe("\u0080x\u009b31m\u009f") == "\\u0080x\\u009b31m\\u009f");
  CHECK(TerminalSafe("evt_\u202egnp.exe") == "evt_\\u202egnp.exe");
  CHECK(TerminalSafe("\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c") ==
        "\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c");
  CHECK(TerminalSafe("a\u200bb\u2028c\ufeffd") == "a\\u200bb\\u2028c\\ufeffd");
  CHECK(TerminalSafe("tag\U000E0041") == "tag\\U000e0041");
  CHECK(TerminalSafeText("x\u009by\u202ez") == "x\\u009by\\u202ez");
  // Neighbours of the escaped ranges are ordinary text.
  CHECK(TerminalSafe("\u00a0\u00e9\u2030\u2070") == "\u00a0\u00e9\u2030\u2070");
}

TEST_CASE("each byte of invalid UTF-8 becomes \\xNN, and decoding resumes after it") {
  CHECK(TerminalSafe("a\xff"
                     "b") == "a\\xffb");
  CHECK(TerminalSafe("\x9b"
                     "31m") == "\\x9b31m");                           // a bare C1 byte (8-bit CSI)
  CHECK(TerminalSafe("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
  CHECK(TerminalSafe("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // a surrogate
  CHECK(TerminalSafe("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  CHECK(TerminalSafe("\xe2\x80") == "\\xe2\\x80");                    // cut short at the end
  CHECK(TerminalSafe("\xe2\x80z\u00fc") == "\\xe2\\x80z\u00fc");      // cut short, then text
}

TEST_CASE("a field reads back as exactly one input: backslashes are doubled") {
  CHECK(TerminalSafe("a\\x1b") == "a\\\\x1b");
  CHECK(TerminalSafe("\x1b") != TerminalSafe("\\x1b"));
  CHECK(TerminalSafeText("{\"a\":\"\\u001b\"}") == "{\"a\":\"\\u001b\"}");  // bodies keep them
}

TEST_CASE("no byte sequence comes out active for a terminal") {
  // Every single byte, every pair of bytes, and each after a valid two-byte lead.
  std::string all;
  for (int a = 0; a < 256; ++a) {
    all += static_cast<char>(a);
    for (int b = 0; b < 256; ++b) {
      const std::string pair{static_cast<char>(a), static_cast<char>(b)};
      REQUIRE(InertForTerminal(TerminalSafe(pair), false));
      REQUIRE(InertForTerminal(TerminalSafeText(pair), true));
    }
  }
  CHECK(InertForTerminal(TerminalSafe(all), false));
  // Every code point up to U+FFFF, encoded.
  for (char32_t cp = 0; cp < 0x10000; ++cp) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    REQUIRE(InertForTerminal(TerminalSafe(s), false));
  }
}
