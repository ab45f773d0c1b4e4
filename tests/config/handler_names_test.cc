// The name of a handler given no `name:` (config.h, DerivedHandlerName and HandlerTargetKey;
// DESIGN.md, Handler names): "<kind>.<hint>.<8 hex digits>", the hint a readable piece of the
// target (a program's file name, a URL's host and port without user info, a folder's last
// part, none for SQL) and the digits SHA-256 over the kind and the target alone. A job is
// matched to its handler by this name across reloads and upgrades, so the names of known
// settings are pinned here; the loader's use of it is in config_test.cc.
#include <catch2/catch.hpp>
#include <string>

#include "config/config.h"
#include "config/yaml_reader.h"

namespace hookbox {
namespace {

// DerivedHandlerName of `kind` over the settings written as YAML.
std::string DerivedNameOf(std::string_view kind, const std::string& settings) {
  return DerivedHandlerName(kind, ParseYamlTree(settings));
}

TEST_CASE("HandlerTargetKey: each kind's target setting; none for an unknown kind",
          "[config][handler_names]") {
  CHECK(HandlerTargetKey("exec") == "command");
  CHECK(HandlerTargetKey("http") == "url");
  CHECK(HandlerTargetKey("file") == "dir");
  CHECK(HandlerTargetKey("sql") == "statements");
  CHECK(HandlerTargetKey("smtp").empty());
  CHECK(HandlerTargetKey("").empty());
  CHECK(HandlerTargetKey("EXEC").empty());
}

TEST_CASE("DerivedHandlerName: the names of known settings do not change",
          "[config][handler_names]") {
  // SHA-256 of "<kind>\0<target bytes>": a list's items each behind its length.
  CHECK(DerivedNameOf("exec", R"({command: ["/usr/local/bin/on-invoice"]})") ==
        "exec.on-invoice.501cfa48");
  CHECK(DerivedNameOf("sql", R"({statements: ["SELECT 1"]})") == "sql.dfd52155");
  CHECK(DerivedNameOf("http", R"({url: "https://user:pw@downstream.example:8443/hooks?x=1"})") ==
        "http.downstream.example-8443.5c21131b");
  CHECK(DerivedNameOf("file", "{dir: /var/lib/hookbox/events/}") == "file.events.21973d7e");
}

TEST_CASE("DerivedHandlerName: the hint, in the characters a name may have",
          "[config][handler_names]") {
  CHECK(DerivedNameOf("exec", R"({command: ["/opt/bin/on order!", "--live"]})")
            .starts_with("exec.on-order-."));
  CHECK(
      DerivedNameOf("exec", "{command: [relative_tool.sh]}").starts_with("exec.relative_tool.sh."));
  CHECK(DerivedNameOf("file", "{dir: /srv/out///}").starts_with("file.out."));
  CHECK(DerivedNameOf("file", "{dir: /}").size() == std::string("file.").size() + 8);
  // The host and port only: never the user info, the path or the query.
  const std::string http = DerivedNameOf("http", R"({url: "http://me:s3cret@[::1]:9000/a?k=v"})");
  CHECK(http.starts_with("http.---1--9000."));
  CHECK(http.find("s3cret") == std::string::npos);
  CHECK(DerivedNameOf("http", R"({url: "http://h.example#x"})").starts_with("http.h.example."));
  // At most 32 characters of hint.
  const std::string name = DerivedNameOf("exec", "{command: [/bin/" + std::string(50, 'x') + "]}");
  CHECK(name == "exec." + std::string(32, 'x') + "." + name.substr(name.size() - 8));
  // SQL statements make no hint; nor does a missing target, or settings that are no mapping.
  CHECK(DerivedNameOf("sql", R"({statements: ["DELETE FROM t"]})").size() == 4 + 8);
  CHECK(DerivedNameOf("exec", "{timeout: 5s}") == DerivedNameOf("exec", "{}"));
  for (const char* settings : {"{}", "~", "[a, b]", "just text"}) {
    INFO(settings);
    CHECK(DerivedNameOf("exec", settings).size() == std::string("exec.").size() + 8);
  }
}

TEST_CASE("DerivedHandlerName: the kind and the target are the identity, nothing else",
          "[config][handler_names]") {
  const std::string base = DerivedNameOf("exec", R"({command: ["/bin/run", "--live"]})");
  // Other settings, and their order, keep the name.
  CHECK(DerivedNameOf("exec", R"({timeout: 30s, command: ["/bin/run", "--live"], env: {A: b}})") ==
        base);
  // Another argument is another handler.
  CHECK(DerivedNameOf("exec", R"({command: ["/bin/run", "--test"]})") != base);
  // ["a b"] and ["a", "b"] are different commands.
  CHECK(DerivedNameOf("exec", R"({command: ["a b"]})") !=
        DerivedNameOf("exec", R"({command: ["a", "b"]})"));
  // The same target under another kind is another handler, hint and all.
  const std::string as_exec = DerivedNameOf("exec", "{command: /data/x}");
  const std::string as_file = DerivedNameOf("file", "{dir: /data/x}");
  CHECK(as_exec.starts_with("exec.x."));
  CHECK(as_file.starts_with("file.x."));
  CHECK(as_exec.substr(as_exec.size() - 8) != as_file.substr(as_file.size() - 8));
  // An item that is itself a list or a mapping counts, as its YAML.
  CHECK(DerivedNameOf("sql", R"({statements: [{a: 1}]})") !=
        DerivedNameOf("sql", R"({statements: [{a: 2}]})"));
}

}  // namespace
}  // namespace hookbox
