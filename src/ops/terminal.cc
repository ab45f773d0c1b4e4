// Escaping of untrusted text for the terminal (see terminal.h): base/utf8.h's strict UTF-8 decoder
// and the list of code points a terminal would act on or that change how text reads.

#include "ops/terminal.h"

#include <cstdint>
#include <cstdio>

#include "base/utf8.h"

namespace hookbox {
namespace {

// Code points that are not shown as themselves: controls, and the invisible format
// characters that reorder or hide text (bidi embeddings, overrides, isolates and marks,
// zero-width characters, line/paragraph separators, BOM, interlinear annotations, tags).
bool MustEscape(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c ||
         (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
         (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) ||
         (cp >= 0xe0000 && cp <= 0xe007f);
}

void AppendHex(std::string& out, const char* format, unsigned value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, format, value);
  out += buf;
}

std::string Escape(std::string_view text, bool multi_line) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const Decoded d = DecodeOne(text);
    if (d.length == 0) {  // not UTF-8: this one byte, then try again at the next
      AppendHex(out, "\\x%02x", static_cast<unsigned char>(text[0]));
      text.remove_prefix(1);
      continue;
    }
    const char32_t cp = d.cp;
    if (multi_line && (cp == '\n' || cp == '\t')) {
      out += static_cast<char>(cp);
    } else if (cp == '\\' && !multi_line) {
      out += "\\\\";
    } else if (cp < 0x20 || cp == 0x7f) {
      AppendHex(out, "\\x%02x", static_cast<unsigned>(cp));
    } else if (MustEscape(cp)) {
      AppendHex(out, cp > 0xffff ? "\\U%08x" : "\\u%04x", static_cast<unsigned>(cp));
    } else {
      out.append(text.substr(0, d.length));
    }
    text.remove_prefix(d.length);
  }
  return out;
}

}  // namespace

std::string TerminalSafe(std::string_view text) { return Escape(text, false); }

std::string TerminalSafeText(std::string_view text) { return Escape(text, true); }

}  // namespace hookbox
