// The table-driven YAML reader that config.yaml, handler kinds' settings included, is read
// with: a mapping is checked against a table of the keys it may hold (each key once, each
// value handed to its field's reader), a list item by item, and scalars through small typed
// readers (text, whole numbers, booleans, durations, sizes, one of a set of names). Every
// problem becomes one line "where: what" in a list instead of stopping at the first, so
// `hookbox check-config` shows them all at once. What a value of the wrong shape gets is
// worded here, once: "expected <what>", the caller naming only <what> (Expected, and the
// readers that take a `what`); the kinds' readers test no node's shape themselves.
//
// This is the one header of hookbox that includes yaml-cpp; config.h and handlers/handler.h
// name a piece of the document only as the YamlTree defined here. yaml-cpp throws:
// its exceptions are caught by whoever calls the reader (config.cc's LoadConfigText, and the
// loader around each kind's reader) and become error lines.
//
// The loader's reader is `YamlReader::Positioned`: "FILE:LINE:COLUMN: " first, as a
// compiler's, from the marks it keeps of every key and list item. A handler kind's reader
// (HandlerKindReaders below) is handed that same reader, so its mistakes read like every
// other. `YamlReader::Plain` words them alike without a position (a kind's settings read
// alone, in the handler tests).
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "config/config.h"
#include "config/handler_kinds.h"

namespace hookbox {

// A piece of config.yaml kept as written (a handler's settings), for the code that reads
// it later. Public headers name it only as an incomplete type (config.h).
struct YamlTree {
  YAML::Node node;
};
// `text` parsed as YAML; throws YAML::Exception as yaml-cpp does (for tests and tools).
YamlTree ParseYamlTree(const std::string& text);

// A name a scalar may take and the value it stands for (`durability: full`).
template <typename T>
struct Choice {
  std::string_view name;
  T value;
};

// One key a mapping may hold, and what to do with its value (given with its "where").
struct YamlField {
  std::string_view key;
  std::function<void(const YAML::Node& value, const std::string& where)> read;
};

std::string Quote(std::string_view s);
// "where.key" ("key" at the top level) and "where[index]": the paths messages name.
std::string Key(const std::string& where, std::string_view key);
std::string Item(const std::string& where, size_t index);

// target = *value, when there is a value.
template <typename T, typename U>
void Set(T& target, std::optional<U> value) {
  if (value) target = static_cast<T>(std::move(*value));
}

template <typename T>
std::string Names(std::span<const Choice<T>> choices) {
  std::string names;
  for (const auto& c : choices) names += (names.empty() ? "" : ", ") + std::string(c.name);
  return names;
}

// "FILE:LINE:COLUMN: what" for an exception of yaml-cpp's ("FILE: what" without a mark).
std::string YamlError(const std::string& file, const YAML::Exception& e);

class YamlReader {
 public:
  // The loader's: every message starts with "FILE:LINE:COLUMN: " of its key.
  static YamlReader Positioned(std::vector<std::string>* errors, std::vector<std::string>* warnings,
                               std::string file) {
    return YamlReader(errors, warnings, std::move(file), true);
  }
  // The same words, with no position: "where: what".
  static YamlReader Plain(std::vector<std::string>* errors) {
    return YamlReader(errors, nullptr, std::string(), false);
  }

  // "where: what" ("what (top level)" for the document itself), after the position.
  void Error(const std::string& where, std::string_view what);
  // Positioned only: a Plain reader has no list of warnings (a kind's settings have none).
  void Warning(const std::string& where, std::string_view what);
  // An error about `at` itself (an unknown or repeated key), found in the mapping `where`.
  void ErrorAt(const YAML::Node& at, const std::string& where, std::string_view what);
  // "where: expected <what>": the one message for a value that is not what its key takes
  // (`what` is a noun phrase: "a mapping", "an absolute path").
  void Expected(const std::string& where, std::string_view what);
  // How many errors have been recorded so far (a kind's reader returns nothing if it grew).
  size_t error_count() const { return errors_->size(); }

  // Checks that `node` is a mapping whose keys are all in `fields`, each at most once, and
  // hands every value to its field's reader. False (after an error) if it is not a mapping.
  bool ReadMapping(const YAML::Node& node, const std::string& where,
                   std::initializer_list<YamlField> fields) {
    return ReadMapping(node, where, std::span<const YamlField>(fields.begin(), fields.size()));
  }
  bool ReadMapping(const YAML::Node& node, const std::string& where,
                   std::span<const YamlField> fields);
  // For the one mapping whose repeated keys were always read, not refused (the http kind's
  // `sign`): every entry is read in order, so the last of a repeat wins. "expected <what>"
  // when it is not a mapping.
  bool ReadMappingKeepingRepeats(const YAML::Node& node, const std::string& where,
                                 std::string_view what, std::initializer_list<YamlField> fields);
  // A mapping whose keys are the operator's own names (an exec handler's `env`, an http
  // handler's `headers`), not a table's: "expected <what>" (and false) when `node` is not a
  // mapping, else read(key, value, where.KEY) for every entry in order, repeats included.
  // A message at where.KEY while it is read is placed at that entry's key.
  bool ReadEntries(const YAML::Node& node, const std::string& where, std::string_view what,
                   const std::function<void(const YAML::Node& key, const YAML::Node& value,
                                            const std::string& key_where)>& read);
  // Checks that `node` is a list (non-empty when `non_empty`) and calls read(item, where[i]);
  // false (after "expected a list" or "expected a non-empty list") when it is not.
  bool ReadList(const YAML::Node& node, const std::string& where, bool non_empty,
                const std::function<void(const YAML::Node&, const std::string&, size_t)>& read);
  // The same, with "expected <what>" for a node that is not such a list (a handler kind's:
  // "a list of exit codes (1-255)").
  bool ReadList(const YAML::Node& node, const std::string& where, bool non_empty,
                std::string_view what,
                const std::function<void(const YAML::Node&, const std::string&, size_t)>& read);
  // "KEY is required" for each of `keys` the mapping `node` lacks.
  void Require(const YAML::Node& node, const std::string& where,
               std::initializer_list<std::string_view> keys);

  // Scalar readers: the value, or nullopt after recording why not.
  std::optional<std::string> Text(const YAML::Node& node, const std::string& where);
  // A scalar's text that passes `valid` (when given); "expected <what>" otherwise, whatever
  // was written instead (a handler kind's: "a directory path", "an SQL statement").
  std::optional<std::string> Scalar(const YAML::Node& node, const std::string& where,
                                    std::string_view what,
                                    bool (*valid)(std::string_view) = nullptr);
  std::optional<std::string> NonEmptyText(const YAML::Node& node, const std::string& where);
  // Non-empty text that passes `valid`; otherwise "<text><complaint>".
  std::optional<std::string> Checked(const YAML::Node& node, const std::string& where,
                                     bool (*valid)(std::string_view), std::string_view complaint);
  // A whole number in min..max; "\"TEXT\" is not a whole number in MIN..MAX" otherwise.
  std::optional<int> Int(const YAML::Node& node, const std::string& where, int min, int max);
  // The same, with "expected <what>" the whole message when the node is not a scalar whole
  // number in min..max (a handler kind's: "an exit code from 1 to 255").
  std::optional<int> Int(const YAML::Node& node, const std::string& where, int min, int max,
                         std::string_view what);
  std::optional<bool> Bool(const YAML::Node& node, const std::string& where);
  // Text that `parse` accepts, parsed; its message otherwise.
  template <typename T>
  std::optional<T> Parsed(const YAML::Node& node, const std::string& where,
                          StatusOr<T> (*parse)(std::string_view));
  // A duration (config.h, ParseDuration) of at least `min`.
  std::optional<Duration> DurationValue(const YAML::Node& node, const std::string& where,
                                        Duration min = Duration(1));
  // A handler's timeout: a duration longer than 0 ("expected a duration such as `example`"
  // when it is not a scalar; "must be longer than 0").
  std::optional<Duration> Timeout(const YAML::Node& node, const std::string& where,
                                  std::string_view example);
  // A size (config.h, ParseSize) greater than 0.
  std::optional<size_t> Size(const YAML::Node& node, const std::string& where);
  template <typename T>
  std::optional<T> OneOf(const YAML::Node& node, const std::string& where,
                         std::span<const Choice<T>> choices);

  // One secret entry, {env: NAME} / {file: PATH} / {value: TEXT} (secrets.h): resolved, or
  // with its source only when not `resolve`; nullopt after the error (which ends with
  // `named`). The item itself is never echoed: it may be the secret, written inline.
  std::optional<Secret> SecretEntry(const YAML::Node& item, const std::string& where, bool resolve,
                                    std::string_view named);
  // A secret entry that must be a Standard Webhooks key (whsec_…), resolved: the http
  // kind's `sign: {secret: …}`.
  std::optional<Secret> SigningKey(const YAML::Node& item, const std::string& where);

 private:
  // ReadMapping's walk ("expected <what>" when `node` is not a mapping); a repeated key is an
  // error when `refuse_repeats`, else read again.
  bool ReadFields(const YAML::Node& node, const std::string& where, std::string_view what,
                  std::span<const YamlField> fields, bool refuse_repeats);
  YamlReader(std::vector<std::string>* errors, std::vector<std::string>* warnings, std::string file,
             bool positioned)
      : errors_(errors), warnings_(warnings), file_(std::move(file)), positioned_(positioned) {}

  // "FILE:LINE:COLUMN: " of the key `where` names, or of the nearest enclosing key or list
  // item whose position is known (a check made after reading, e.g. a duplicate name, names
  // its endpoint); "FILE: " when none is (the document as a whole); "" when Plain.
  std::string Position(std::string where) const;
  // Remembers where a key or a list item is, for Position.
  void Mark(const std::string& where, const YAML::Node& node);

  std::vector<std::string>* errors_;
  std::vector<std::string>* warnings_;
  std::string file_;
  bool positioned_;
  std::map<std::string, YAML::Mark> marks_;  // by the path Key() and Item() build
};

// A handler kind's reader (handlers/<kind>/, named by its row of config/handler_kinds.h):
// reads `settings` (the mapping under the kind key, `rate` and `circuit` taken out) with
// `reader`, recording every problem there at its key under `where`, and checks on this host
// what `options.host_checks` asks. The kind's plain values, or nullptr when it recorded any
// problem. It may throw YAML::Exception (the loader reports it at `where`).
using HandlerKindReader = std::shared_ptr<const KindSettings> (*)(YamlReader& reader,
                                                                  const YamlTree& settings,
                                                                  const std::string& where,
                                                                  const LoadOptions& options);

// The readers, in the order of the rows of config/handler_kinds.h (LoadOptions::kinds).
struct HandlerKindReaders {
  HandlerKindReader read[std::size(kHandlerKinds)];
};

template <typename T>
std::optional<T> YamlReader::Parsed(const YAML::Node& node, const std::string& where,
                                    StatusOr<T> (*parse)(std::string_view)) {
  auto text = Text(node, where);
  if (!text) return std::nullopt;
  auto value = parse(*text);
  if (!value.ok()) {
    Error(where, value.status().what());
    return std::nullopt;
  }
  return std::move(*value);
}

template <typename T>
std::optional<T> YamlReader::OneOf(const YAML::Node& node, const std::string& where,
                                   std::span<const Choice<T>> choices) {
  auto text = Text(node, where);
  if (!text) return std::nullopt;
  for (const auto& c : choices) {
    if (c.name == *text) return c.value;
  }
  Error(where, Quote(*text) + " is not one of " + Names(choices));
  return std::nullopt;
}

}  // namespace hookbox
