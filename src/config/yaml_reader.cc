// The table-driven YAML reader (yaml_reader.h): mappings against a table of keys, lists item
// by item, typed scalars, each problem one line in the caller's list. What a problem says is
// decided here, once (a value of the wrong shape: Expected); a Positioned reader puts
// FILE:LINE:COLUMN before it.

#include "config/yaml_reader.h"

#include <charconv>
#include <limits>
#include <set>

#include "config/secrets.h"

namespace hookbox {

YamlTree ParseYamlTree(const std::string& text) { return YamlTree{YAML::Load(text)}; }

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string Key(const std::string& where, std::string_view key) {
  return where.empty() ? std::string(key) : where + "." + std::string(key);
}

std::string Item(const std::string& where, size_t index) {
  return where + "[" + std::to_string(index) + "]";
}

std::string YamlError(const std::string& file, const YAML::Exception& e) {
  if (e.mark.is_null()) return file + ": " + e.msg;
  return file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
         ": " + e.msg;
}

void YamlReader::Error(const std::string& where, std::string_view what) {
  errors_->push_back(Position(where) + (where.empty() ? std::string(what) + " (top level)"
                                                      : where + ": " + std::string(what)));
}

void YamlReader::Warning(const std::string& where, std::string_view what) {
  warnings_->push_back(Position(where) + where + ": " + std::string(what));
}

void YamlReader::ErrorAt(const YAML::Node& at, const std::string& where, std::string_view what) {
  const YAML::Mark m = at.Mark();
  if (!positioned_ || m.is_null()) return Error(where, what);
  errors_->push_back(
      file_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " +
      (where.empty() ? std::string(what) + " (top level)" : where + ": " + std::string(what)));
}

void YamlReader::Expected(const std::string& where, std::string_view what) {
  Error(where, "expected " + std::string(what));
}

std::string YamlReader::Position(std::string where) const {
  if (!positioned_) return "";
  for (;;) {
    if (auto it = marks_.find(where); it != marks_.end()) {
      return file_ + ":" + std::to_string(it->second.line + 1) + ":" +
             std::to_string(it->second.column + 1) + ": ";
    }
    // Up one level: "a.b" -> "a", "a[2]" -> "a", "a" -> "".
    const size_t cut = where.find_last_of(".[");
    if (where.empty()) return file_.empty() ? "" : file_ + ": ";
    where = cut == std::string::npos ? "" : where.substr(0, cut);
  }
}

void YamlReader::Mark(const std::string& where, const YAML::Node& node) {
  if (!positioned_) return;
  const YAML::Mark m = node.Mark();
  if (!m.is_null()) marks_.emplace(where, m);
}

bool YamlReader::ReadMapping(const YAML::Node& node, const std::string& where,
                             std::span<const YamlField> fields) {
  return ReadFields(node, where, "a mapping", fields, /*refuse_repeats=*/true);
}

bool YamlReader::ReadMappingKeepingRepeats(const YAML::Node& node, const std::string& where,
                                           std::string_view what,
                                           std::initializer_list<YamlField> fields) {
  return ReadFields(node, where, what, std::span<const YamlField>(fields.begin(), fields.size()),
                    /*refuse_repeats=*/false);
}

bool YamlReader::ReadFields(const YAML::Node& node, const std::string& where, std::string_view what,
                            std::span<const YamlField> fields, bool refuse_repeats) {
  if (!node.IsMap()) {
    Expected(where, what);
    return false;
  }
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) {
      Error(where, "a key must be a plain name");
      continue;
    }
    const std::string& key = it->first.Scalar();
    const YamlField* field = nullptr;
    for (const YamlField& f : fields) {
      if (f.key == key) field = &f;
    }
    if (field == nullptr) {
      ErrorAt(it->first, where, "unknown key " + Quote(key));
    } else if (!seen.insert(key).second && refuse_repeats) {
      ErrorAt(it->first, where, "key " + Quote(key) + " appears twice");
    } else {
      Mark(Key(where, key), it->first);
      field->read(it->second, Key(where, key));
    }
  }
  return true;
}

bool YamlReader::ReadEntries(
    const YAML::Node& node, const std::string& where, std::string_view what,
    const std::function<void(const YAML::Node&, const YAML::Node&, const std::string&)>& read) {
  if (!node.IsMap()) {
    Expected(where, what);
    return false;
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    // A key that is not a scalar reads as "", as yaml-cpp's Scalar() has it.
    const std::string key_where = Key(where, it->first.Scalar());
    // This entry's key, not an earlier one's of the same name: a repeat is read again.
    const YAML::Mark m = it->first.Mark();
    if (positioned_ && !m.is_null()) marks_.insert_or_assign(key_where, m);
    read(it->first, it->second, key_where);
    marks_.erase(key_where);
  }
  return true;
}

bool YamlReader::ReadList(
    const YAML::Node& node, const std::string& where, bool non_empty,
    const std::function<void(const YAML::Node&, const std::string&, size_t)>& read) {
  const bool is_list = node.IsSequence();
  return ReadList(node, where, non_empty, is_list ? "a non-empty list" : "a list", read);
}

bool YamlReader::ReadList(
    const YAML::Node& node, const std::string& where, bool non_empty, std::string_view what,
    const std::function<void(const YAML::Node&, const std::string&, size_t)>& read) {
  if (!node.IsSequence() || (non_empty && node.size() == 0)) {
    Expected(where, what);
    return false;
  }
  for (size_t i = 0; i < node.size(); ++i) {
    Mark(Item(where, i), node[i]);
    read(node[i], Item(where, i), i);
  }
  return true;
}

void YamlReader::Require(const YAML::Node& node, const std::string& where,
                         std::initializer_list<std::string_view> keys) {
  if (!node.IsMap()) return;  // already reported by ReadMapping
  for (std::string_view key : keys) {
    if (!node[std::string(key)]) Error(where, std::string(key) + " is required");
  }
}

std::optional<std::string> YamlReader::Text(const YAML::Node& node, const std::string& where) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsNull()) {
    Expected(where, "a value, found nothing");
  } else {
    Expected(where, node.IsSequence() ? "a single value, found a list"
                                      : "a single value, found a mapping");
  }
  return std::nullopt;
}

std::optional<std::string> YamlReader::Scalar(const YAML::Node& node, const std::string& where,
                                              std::string_view what,
                                              bool (*valid)(std::string_view)) {
  if (node.IsScalar() && (valid == nullptr || valid(node.Scalar()))) return node.Scalar();
  Expected(where, what);
  return std::nullopt;
}

std::optional<std::string> YamlReader::NonEmptyText(const YAML::Node& node,
                                                    const std::string& where) {
  auto text = Text(node, where);
  if (text && text->empty()) {
    Error(where, "must not be empty");
    return std::nullopt;
  }
  return text;
}

std::optional<std::string> YamlReader::Checked(const YAML::Node& node, const std::string& where,
                                               bool (*valid)(std::string_view),
                                               std::string_view complaint) {
  auto text = NonEmptyText(node, where);
  if (text && !valid(*text)) {
    Error(where, Quote(*text) + std::string(complaint));
    return std::nullopt;
  }
  return text;
}

namespace {

// `text` as a whole number in min..max, all of it.
std::optional<int> WholeNumber(std::string_view text, int min, int max) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<int> YamlReader::Int(const YAML::Node& node, const std::string& where, int min,
                                   int max) {
  auto text = Text(node, where);
  if (!text) return std::nullopt;
  if (auto value = WholeNumber(*text, min, max)) return value;
  std::string range = max == std::numeric_limits<int>::max()
                          ? ">= " + std::to_string(min)
                          : "in " + std::to_string(min) + ".." + std::to_string(max);
  Error(where, Quote(*text) + " is not a whole number " + range);
  return std::nullopt;
}

std::optional<int> YamlReader::Int(const YAML::Node& node, const std::string& where, int min,
                                   int max, std::string_view what) {
  auto value = WholeNumber(node.IsScalar() ? node.Scalar() : std::string(), min, max);
  if (!value) Expected(where, what);
  return value;
}

std::optional<bool> YamlReader::Bool(const YAML::Node& node, const std::string& where) {
  bool value = false;
  if (node.IsScalar() && YAML::convert<bool>::decode(node, value)) return value;
  if (node.IsScalar()) {
    Error(where, Quote(node.Scalar()) + " is not true or false");
  } else {
    Text(node, where);  // reports the shape
  }
  return std::nullopt;
}

std::optional<Duration> YamlReader::DurationValue(const YAML::Node& node, const std::string& where,
                                                  Duration min) {
  auto value = Parsed(node, where, ParseDuration);
  if (value && *value < min) {
    Error(where, Quote(node.Scalar()) + " is too short (at least " + FormatDuration(min) + ")");
    return std::nullopt;
  }
  return value;
}

std::optional<Duration> YamlReader::Timeout(const YAML::Node& node, const std::string& where,
                                            std::string_view example) {
  if (!node.IsScalar()) {
    Expected(where, "a duration such as " + std::string(example));
    return std::nullopt;
  }
  auto value = ParseDuration(node.Scalar());
  if (!value.ok()) {
    Error(where, value.status().what());
    return std::nullopt;
  }
  if (value->count() <= 0) {
    Error(where, "must be longer than 0");
    return std::nullopt;
  }
  return *value;
}

std::optional<size_t> YamlReader::Size(const YAML::Node& node, const std::string& where) {
  auto value = Parsed(node, where, ParseSize);
  if (value && *value == 0) {
    Error(where, "must be greater than 0");
    return std::nullopt;
  }
  return value;
}

namespace {

using config_internal::SecretSource;

constexpr Choice<SecretSource> kSecretSources[] = {
    {"env", SecretSource::kEnv}, {"file", SecretSource::kFile}, {"value", SecretSource::kValue}};
constexpr std::string_view kSecretShape = "one of {env: NAME}, {file: PATH} or {value: TEXT}";

}  // namespace

std::optional<Secret> YamlReader::SecretEntry(const YAML::Node& item, const std::string& where,
                                              bool resolve, std::string_view named) {
  if (!item.IsMap() || item.size() != 1 || !item.begin()->first.IsScalar()) {
    Expected(where, kSecretShape);
    return std::nullopt;
  }
  // Copies: the iterator's key/value pair is a temporary.
  const YAML::Node entry_key = item.begin()->first;
  const YAML::Node arg = item.begin()->second;
  const std::string& kind = entry_key.Scalar();
  std::optional<SecretSource> source;
  for (const auto& c : kSecretSources) {
    if (c.name == kind) source = c.value;
  }
  if (!source) {
    Error(where, "unknown key " + Quote(kind) + " (expected env, file or value)");
    return std::nullopt;
  }
  if (!arg.IsScalar() && !arg.IsNull()) {
    Expected(Key(where, kind), "a single value");
    return std::nullopt;
  }
  if (!resolve) return Secret{kind == "value" ? kind : kind + ":" + arg.Scalar(), ""};
  auto secret =
      config_internal::ResolveSecret(*source, arg.IsNull() ? std::string() : arg.Scalar());
  if (!secret.ok()) {
    Error(where, secret.status().what() + std::string(named));
    return std::nullopt;
  }
  return std::move(*secret);
}

std::optional<Secret> YamlReader::SigningKey(const YAML::Node& item, const std::string& where) {
  auto secret = SecretEntry(item, where, true, "");
  if (secret && !config_internal::IsStandardWebhooksSecret(secret->value)) {
    Error(where, "the secret from " + secret->source +
                     " is not a Standard Webhooks key (whsec_ followed by base64)");
    return std::nullopt;
  }
  return secret;
}

}  // namespace hookbox
