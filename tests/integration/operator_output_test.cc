// End-to-end tests of what the operator's CLI prints: ids, types and bodies chosen by whoever
// signed a delivery reach `inbox list` and `inbox show` escaped, so no ESC, C1 control or bidi
// override acts on the operator's terminal, while `--json` and `inbox show --raw-body` stay
// exact.
#include <catch2/catch.hpp>
#include <string>

#include "daemon.h"

using hookbox::testing::CliResult;
using hookbox::testing::Daemon;
using hookbox::testing::TempDir;
using nlohmann::json;

namespace {

const std::string& kConfig = hookbox::testing::kRawEndpointConfig;

// Why `s` would act on a terminal, or "" when it would not: a C0 control other than newline
// and tab, DEL, bytes that are not UTF-8, a C1 control (U+0080..U+009F), or a bidi control.
std::string TerminalHazard(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
        return "control byte " + std::to_string(c) + " at " + std::to_string(i);
      }
      ++i;
      continue;
    }
    const size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    char32_t cp = n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
    bool ok = n != 0 && i + n <= s.size() && c <= 0xf4;
    for (size_t k = 1; ok && k < n; ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + k]);
      ok = (b & 0xc0) == 0x80;
      cp = (cp << 6) | (b & 0x3f);
    }
    if (!ok) return "a byte that is not UTF-8 at " + std::to_string(i);
    if (cp <= 0x9f) return "a C1 control at " + std::to_string(i);
    if (cp == 0x061c || (cp >= 0x200e && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069)) {
      return "a bidi control at " + std::to_string(i);
    }
    i += n;
  }
  return "";
}

// POSTs `body` with the id and type headers as raw bytes (no client library in between).
std::string PostRaw(const Daemon& d, const std::string& id, const std::string& type,
                    const std::string& body) {
  return d.Raw("POST /hooks/raw HTTP/1.1\r\nHost: test\r\nX-Id: " + id + "\r\nX-Type: " + type +
               "\r\nContent-Type: application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
}

}  // namespace

TEST_CASE("inbox list and show escape terminal controls; --json and --raw-body are exact",
          "[cli]") {
  TempDir dir;
  Daemon d(dir, kConfig);
  // Valid UTF-8 throughout: C1 CSI and a right-to-left override in the id and the type; a
  // body that retitles (OSC 0 ... BEL), recolours (CSI 31 m), clears (C1 CSI 2 J) and
  // reverses, around printable non-ASCII text and a newline.
  const std::string id = "evt-\u009b2J-\u202egnp.exe";
  const std::string type = "invoice\u202e.paid";
  const std::string body =
      "{\"note\":\"\x1b]0;pwned\x07\x1b[31mred\u009b2J \u202e"
      "cod.exe ünïcode\"}\n{\"second\":\"line\"}";
  // Bytes that are not UTF-8 (a bare 8-bit CSI and 0xff) in the id and the body, and a NUL.
  const std::string bad_id = std::string("evt-\x9b") + "31m-\xff";
  const std::string bad_body = std::string(
                                   "\x9b"
                                   "31mraw") +
                               '\0' + "\xff\x1b[0m";
  REQUIRE(PostRaw(d, id, type, body).find("200 OK") != std::string::npos);
  REQUIRE(PostRaw(d, bad_id, "t", bad_body).find("200 OK") != std::string::npos);

  SECTION("inbox list") {
    CliResult list = d.Cli({"inbox", "list"});
    REQUIRE(list.exit_code == 0);
    CHECK(TerminalHazard(list.out) == "");
    CHECK(list.out.find("evt-\\u009b2J-\\u202egnp.exe") != std::string::npos);
    CHECK(list.out.find("invoice\\u202e.paid") != std::string::npos);
    CHECK(list.out.find("evt-\\x9b31m-\\xff") != std::string::npos);
    // --json is exact for text that is UTF-8.
    CliResult as_json = d.Cli({"inbox", "list", "--json"});
    REQUIRE(as_json.exit_code == 0);
    json rows = json::parse(as_json.out);
    REQUIRE(rows.size() == 2);
    bool found = false;
    for (const json& r : rows) {
      if (r["event_id"] == id) {
        found = true;
        CHECK(r["event_type"] == type);
      }
    }
    CHECK(found);
  }

  SECTION("inbox show") {
    CliResult show = d.Cli({"inbox", "show", "raw", id});
    REQUIRE(show.exit_code == 0);
    CHECK(TerminalHazard(show.out) == "");
    CHECK(show.out.find("evt-\\u009b2J-\\u202egnp.exe") != std::string::npos);
    CHECK(show.out.find("invoice\\u202e.paid") != std::string::npos);
    // The body: escaped, printable text kept, its newline kept.
    CHECK(show.out.find("\\x1b]0;pwned\\x07\\x1b[31mred\\u009b2J \\u202ecod.exe ünïcode\"}\n"
                        "{\"second\":\"line\"}") != std::string::npos);

    CliResult bad = d.Cli({"inbox", "show", "raw", bad_id});
    REQUIRE(bad.exit_code == 0);
    CHECK(TerminalHazard(bad.out) == "");
    CHECK(bad.out.find("evt-\\x9b31m-\\xff") != std::string::npos);
    CHECK(bad.out.find("\\x9b31mraw\\x00\\xff\\x1b[0m") != std::string::npos);
  }

  SECTION("inbox show --json is exact") {
    CliResult show = d.Cli({"inbox", "show", "raw", id, "--json"});
    REQUIRE(show.exit_code == 0);
    json detail = json::parse(show.out);
    CHECK(detail["event_id"] == id);
    CHECK(detail["event_type"] == type);
    CHECK(detail["body"] == body);
  }

  SECTION("inbox show --raw-body writes the exact bytes and nothing else") {
    CliResult raw = d.Cli({"inbox", "show", "raw", id, "--raw-body"});
    REQUIRE(raw.exit_code == 0);
    CHECK(raw.out == body);
    CliResult bad = d.Cli({"inbox", "show", "raw", bad_id, "--raw-body"});
    REQUIRE(bad.exit_code == 0);
    CHECK(bad.out == bad_body);
    CHECK(d.Cli({"inbox", "show", "raw", id, "--raw-body", "--json"}).exit_code != 0);
  }

  SECTION("an id typed back on the command line is escaped in messages") {
    CliResult missing = d.Cli({"inbox", "show", "raw", "no-\x1b[31m-such"});
    CHECK(missing.exit_code == 1);
    CHECK(TerminalHazard(missing.err) == "");
    CHECK(missing.err.find("no-\\x1b[31m-such") != std::string::npos);
  }
}
