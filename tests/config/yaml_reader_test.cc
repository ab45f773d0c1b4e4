// The table-driven YAML reader (config/yaml_reader.h) on its own, not through the loader:
// mappings against their tables (unknown, repeated and non-plain keys), the operator's own
// keys, lists, required keys, each typed scalar reader and secret entry with the one line it
// records for a bad value, and where a Positioned reader puts FILE:LINE:COLUMN. The loader's
// use of it, file by file, is config_test.cc.
#include "config/yaml_reader.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <climits>
#include <string>
#include <vector>

#include "load_helpers.h"

namespace hookbox {
namespace {

using testing::TempFile;

// A reader and the lines it records; positioned as the loader's, in "t.yaml".
struct Recorded {
  explicit Recorded(bool positioned = true)
      : reader(positioned ? YamlReader::Positioned(&errors, &warnings, "t.yaml")
                          : YamlReader::Plain(&errors)) {}
  std::vector<std::string> errors, warnings;
  YamlReader reader;
};

YAML::Node Yaml(const std::string& text) { return ParseYamlTree(text).node; }

bool IsLower(std::string_view s) {
  return s.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == s.npos;
}

TEST_CASE("ReadMapping: each key to its reader at its path; others refused at their key",
          "[config][yaml_reader]") {
  Recorded r;
  std::vector<std::string> read;
  auto note = [&](const YAML::Node& v, const std::string& where) { read.push_back(where); };
  const YAML::Node doc = Yaml("name: a\nlimits: {max: 3, [x]: 1}\nbogus: 1\nname: b\n");
  CHECK(r.reader.ReadMapping(
      doc, "", {{"name", note}, {"limits", [&](const YAML::Node& v, const std::string& where) {
                                   CHECK(r.reader.ReadMapping(v, where, {{"max", note}}));
                                   r.reader.Error(Key(where, "max"), "too big");
                                 }}}));
  CHECK(read == std::vector<std::string>{"name", "limits.max"});
  CHECK(r.errors == std::vector<std::string>{
                        "t.yaml:2:1: limits: a key must be a plain name",
                        "t.yaml:2:10: limits.max: too big",
                        "t.yaml:3:1: unknown key \"bogus\" (top level)",
                        "t.yaml:4:1: key \"name\" appears twice (top level)",
                    });
  CHECK_FALSE(r.reader.ReadMapping(Yaml("[1, 2]"), "limits", {{"max", nullptr}}));
  CHECK(r.errors.back() == "t.yaml:2:1: limits: expected a mapping");
  CHECK(r.reader.error_count() == 5);

  // The one mapping that keeps repeats: the last one wins.
  std::string secret;
  auto keep = [&](const YAML::Node& v, const std::string&) { secret = v.Scalar(); };
  CHECK(r.reader.ReadMappingKeepingRepeats(Yaml("{secret: a, secret: b}"), "sign", "a mapping",
                                           {{"secret", keep}}));
  CHECK(secret == "b");
  CHECK_FALSE(r.reader.ReadMappingKeepingRepeats(Yaml("x"), "sign", "a signing block", {}));
  CHECK(r.errors.back() == "t.yaml: sign: expected a signing block");
}

TEST_CASE("ReadEntries: the operator's own keys in order, repeats included, each at its key",
          "[config][yaml_reader]") {
  Recorded r;
  std::vector<std::string> seen;
  CHECK(r.reader.ReadEntries(
      Yaml("B: 2\nA: 1\nB: 3\n"), "env", "a mapping of names",
      [&](const YAML::Node& key, const YAML::Node& value, const std::string& where) {
        seen.push_back(where + "=" + value.Scalar());
        if (value.Scalar() == "3") r.reader.Error(where, "bad");
      }));
  CHECK(seen == std::vector<std::string>{"env.B=2", "env.A=1", "env.B=3"});
  CHECK(r.errors == std::vector<std::string>{"t.yaml:3:1: env.B: bad"});
  // Once read, a message about the entry is no longer placed at it.
  r.reader.Error("env.B", "later");
  CHECK(r.errors.back() == "t.yaml: env.B: later");
  CHECK_FALSE(r.reader.ReadEntries(Yaml("[a]"), "env", "a mapping of names",
                                   [](const auto&, const auto&, const auto&) {}));
  CHECK(r.errors.back() == "t.yaml: env: expected a mapping of names");
}

TEST_CASE("ReadList and Require: items at where[i]; the list's and the keys' refusals",
          "[config][yaml_reader]") {
  Recorded r;
  std::vector<size_t> indexes;
  const YAML::Node list = Yaml("- a\n- b\n");
  CHECK(r.reader.ReadList(list, "items", true,
                          [&](const YAML::Node& item, const std::string& where, size_t i) {
                            indexes.push_back(i);
                            if (item.Scalar() == "b") r.reader.Error(where, "no b");
                          }));
  CHECK(indexes == std::vector<size_t>{0, 1});
  CHECK(r.errors.back() == "t.yaml:2:3: items[1]: no b");
  auto none = [](const YAML::Node&, const std::string&, size_t) {};
  CHECK(r.reader.ReadList(Yaml("[]"), "items", false, none));
  CHECK_FALSE(r.reader.ReadList(Yaml("[]"), "items", true, none));
  CHECK(r.errors.back() == "t.yaml: items: expected a non-empty list");
  CHECK_FALSE(r.reader.ReadList(Yaml("x"), "items", true, none));
  CHECK(r.errors.back() == "t.yaml: items: expected a list");
  CHECK_FALSE(r.reader.ReadList(Yaml("{a: 1}"), "codes", false, "a list of exit codes", none));
  CHECK(r.errors.back() == "t.yaml: codes: expected a list of exit codes");

  Recorded plain(false);
  plain.reader.Require(Yaml("{a: 1}"), "h", {"a", "b", "c"});
  CHECK(plain.errors == std::vector<std::string>{"h: b is required", "h: c is required"});
  plain.reader.Require(Yaml("[1]"), "h", {"a"});  // not a mapping: ReadMapping said so
  CHECK(plain.errors.size() == 2);
}

TEST_CASE("text readers: the value, or one line saying what was wrong", "[config][yaml_reader]") {
  Recorded r(false);
  CHECK(r.reader.Text(Yaml("hello"), "k") == "hello");
  CHECK_FALSE(r.reader.Text(Yaml("~"), "k"));
  CHECK_FALSE(r.reader.Text(Yaml("[1]"), "k"));
  CHECK_FALSE(r.reader.Text(Yaml("{a: 1}"), "k"));
  CHECK(r.reader.Scalar(Yaml("abc"), "k", "lower case", IsLower) == "abc");
  CHECK_FALSE(r.reader.Scalar(Yaml("aBc"), "k", "lower case", IsLower));
  CHECK_FALSE(r.reader.Scalar(Yaml("[a]"), "k", "a directory path"));
  CHECK_FALSE(r.reader.NonEmptyText(Yaml("''"), "k"));
  CHECK(r.reader.Checked(Yaml("abc"), "k", IsLower, " is not lower case") == "abc");
  CHECK_FALSE(r.reader.Checked(Yaml("aBc"), "k", IsLower, " is not lower case"));
  CHECK(r.errors == std::vector<std::string>{
                        "k: expected a value, found nothing",
                        "k: expected a single value, found a list",
                        "k: expected a single value, found a mapping",
                        "k: expected lower case",
                        "k: expected a directory path",
                        "k: must not be empty",
                        "k: \"aBc\" is not lower case",
                    });
  r.reader.Error("", "the document is empty");
  CHECK(r.errors.back() == "the document is empty (top level)");
}

TEST_CASE("number, boolean and choice readers", "[config][yaml_reader]") {
  Recorded r(false);
  CHECK(r.reader.Int(Yaml("7"), "n", 1, 10) == 7);
  for (const char* bad : {"11", "0", "3x", "+", "1.5", "99999999999"}) {
    INFO(bad);
    CHECK_FALSE(r.reader.Int(Yaml(bad), "n", 1, 10));
    CHECK(r.errors.back() == "n: \"" + std::string(bad) + "\" is not a whole number in 1..10");
  }
  CHECK_FALSE(r.reader.Int(Yaml("0"), "n", 1, INT_MAX));
  CHECK(r.errors.back() == "n: \"0\" is not a whole number >= 1");
  CHECK(r.reader.Int(Yaml("3"), "code", 1, 255, "an exit code from 1 to 255") == 3);
  for (const char* bad : {"256", "[1]", "x"}) {
    CHECK_FALSE(r.reader.Int(Yaml(bad), "code", 1, 255, "an exit code from 1 to 255"));
    CHECK(r.errors.back() == "code: expected an exit code from 1 to 255");
  }
  // Booleans are read the YAML way.
  for (const char* yes : {"true", "True", "yes", "on", "y"})
    CHECK(r.reader.Bool(Yaml(yes), "b") == true);
  for (const char* no : {"false", "no", "off", "n"}) CHECK(r.reader.Bool(Yaml(no), "b") == false);
  CHECK_FALSE(r.reader.Bool(Yaml("maybe"), "b"));
  CHECK(r.errors.back() == "b: \"maybe\" is not true or false");
  CHECK_FALSE(r.reader.Bool(Yaml("[true]"), "b"));
  CHECK(r.errors.back() == "b: expected a single value, found a list");

  constexpr Choice<int> kLevels[] = {{"full", 2}, {"normal", 1}, {"off", 0}};
  CHECK(r.reader.OneOf<int>(Yaml("normal"), "durability", kLevels) == 1);
  CHECK_FALSE(r.reader.OneOf<int>(Yaml("fast"), "durability", kLevels));
  CHECK(r.errors.back() == "durability: \"fast\" is not one of full, normal, off");
}

TEST_CASE("duration, timeout and size readers", "[config][yaml_reader]") {
  using std::chrono::seconds;
  Recorded r(false);
  CHECK(r.reader.DurationValue(Yaml("5m"), "d") == std::chrono::minutes(5));
  CHECK_FALSE(r.reader.DurationValue(Yaml("10"), "d"));
  CHECK(r.errors.back() == "d: \"10\" is not a duration: add a unit (ms, s, m, h or d)");
  CHECK_FALSE(r.reader.DurationValue(Yaml("500ms"), "d", seconds(1)));
  CHECK(r.errors.back() == "d: \"500ms\" is too short (at least 1s)");
  CHECK(r.reader.Timeout(Yaml("30s"), "t", "30s") == seconds(30));
  CHECK_FALSE(r.reader.Timeout(Yaml("[30s]"), "t", "30s"));
  CHECK(r.errors.back() == "t: expected a duration such as 30s");
  CHECK_FALSE(r.reader.Timeout(Yaml("0s"), "t", "30s"));
  CHECK(r.errors.back() == "t: must be longer than 0");
  CHECK_FALSE(r.reader.Timeout(Yaml("soon"), "t", "30s"));
  CHECK(r.errors.back() == "t: \"soon\" is not a duration (use e.g. 300ms, 10s, 5m, 2h, 7d)");
  CHECK(r.reader.Size(Yaml("1MiB"), "s") == size_t{1024 * 1024});
  CHECK_FALSE(r.reader.Size(Yaml("0"), "s"));
  CHECK(r.errors.back() == "s: must be greater than 0");
  CHECK_FALSE(r.reader.Size(Yaml("lots"), "s"));
  CHECK(r.errors.back() == "s: \"lots\" is not a size (use e.g. 64KiB, 1MiB)");
}

TEST_CASE("SecretEntry and SigningKey: resolved or only named; never the secret in a message",
          "[config][yaml_reader]") {
  Recorded r(false);
  ::setenv("HOOKBOX_YAML_READER_SECRET", "from-env", 1);
  auto env = r.reader.SecretEntry(Yaml("{env: HOOKBOX_YAML_READER_SECRET}"), "s", true, "");
  REQUIRE(env);
  CHECK(env->source == "env:HOOKBOX_YAML_READER_SECRET");
  CHECK(env->value == "from-env");
  ::unsetenv("HOOKBOX_YAML_READER_SECRET");
  TempFile file("from-file\n");
  auto from_file = r.reader.SecretEntry(Yaml("{file: " + file.path() + "}"), "s", true, "");
  REQUIRE(from_file);
  CHECK(from_file->value == "from-file");
  auto named = r.reader.SecretEntry(Yaml("{value: inline-secret}"), "s", false, "");
  REQUIRE(named);
  CHECK(named->source == "value");
  CHECK(named->value.empty());
  CHECK(r.errors.empty());

  CHECK_FALSE(r.reader.SecretEntry(Yaml("inline-secret"), "s", true, ""));
  CHECK(r.errors.back() == "s: expected one of {env: NAME}, {file: PATH} or {value: TEXT}");
  CHECK_FALSE(r.reader.SecretEntry(Yaml("{vault: x}"), "s", true, ""));
  CHECK(r.errors.back() == "s: unknown key \"vault\" (expected env, file or value)");
  CHECK_FALSE(r.reader.SecretEntry(Yaml("{value: [inline-secret]}"), "s", true, ""));
  CHECK(r.errors.back() == "s.value: expected a single value");
  CHECK_FALSE(r.reader.SecretEntry(Yaml("{env: HOOKBOX_YAML_READER_UNSET}"), "s", true, " (hmac)"));
  CHECK(r.errors.back() == "s: environment variable HOOKBOX_YAML_READER_UNSET is not set (hmac)");
  CHECK(r.reader.SigningKey(Yaml("{value: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}"), "sign"));
  CHECK_FALSE(r.reader.SigningKey(Yaml("{value: inline-secret}"), "sign"));
  CHECK(r.errors.back() ==
        "sign: the secret from value is not a Standard Webhooks key (whsec_ followed by base64)");
  for (const std::string& line : r.errors) CHECK(line.find("inline-secret") == std::string::npos);
}

TEST_CASE("positions: at the nearest known key, FILE alone, or none when Plain",
          "[config][yaml_reader]") {
  Recorded r;
  r.reader.ReadMapping(Yaml("a:\n  b: 1\n"), "",
                       {{"a", [&](const YAML::Node& v, const std::string& w) {
                           r.reader.ReadMapping(v, w, {{"c", nullptr}});
                         }}});
  CHECK(r.errors.back() == "t.yaml:2:3: a: unknown key \"b\"");
  r.reader.Error("a.b.c[3]", "made up later");  // up to the nearest key that was read: a
  CHECK(r.errors.back() == "t.yaml:1:1: a.b.c[3]: made up later");
  r.reader.Warning("a", "deprecated");
  CHECK(r.warnings == std::vector<std::string>{"t.yaml:1:1: a: deprecated"});
  Recorded plain(false);
  plain.reader.ErrorAt(Yaml("{x: 1}").begin()->first, "m", "unknown key \"x\"");
  CHECK(plain.errors == std::vector<std::string>{"m: unknown key \"x\""});

  // A syntax error of yaml-cpp's, with its mark; one without a mark names the file alone.
  try {
    ParseYamlTree("a: [1,\n  b: c\n");
    FAIL("no exception");
  } catch (const YAML::Exception& e) {
    CHECK(YamlError("t.yaml", e).starts_with("t.yaml:" + std::to_string(e.mark.line + 1) + ":"));
  }
  CHECK(YamlError("t.yaml", YAML::Exception(YAML::Mark::null_mark(), "bad")) == "t.yaml: bad");
  CHECK(Key("", "a") == "a");
  CHECK(Key("a", "b") == "a.b");
  CHECK(Item("a.b", 2) == "a.b[2]");
  CHECK(Quote("x") == "\"x\"");
}

}  // namespace
}  // namespace hookbox
