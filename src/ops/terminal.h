// Text from the inbox made safe to print on an operator's terminal. Ids, types, headers and
// bodies are chosen by whoever signed the delivery; printed as they are, an ESC or a C1
// control (U+009B is CSI) would retitle, recolour or rewrite the operator's terminal, and a
// bidi override (U+202E) would make one id read as another. The CLI's human output (tables,
// `inbox show`) passes every such field through these functions; `--json` and
// `--raw-body` stay exact.
#pragma once

#include <string>
#include <string_view>

namespace hookbox {

// One field on one line: printable UTF-8 ("ünïcode") is kept as is; C0 controls and DEL
// become `\xNN` (`\x1b`), C1 controls `\u0080`..`\u009f`, bidi and other invisible
// format characters `\u202e`, `\u200b`, `\U000e0041`, each byte of invalid UTF-8 `\xNN`,
// and a backslash `\\`, so that every output reads back as exactly one input.
std::string TerminalSafe(std::string_view text);

// A multi-line text (a body): as TerminalSafe, but newlines and tabs are kept so a body
// stays readable, and backslashes are kept as they are (JSON is full of them).
std::string TerminalSafeText(std::string_view text);

}  // namespace hookbox
