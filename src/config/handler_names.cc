// The stable name of a handler given no `name:` (DESIGN.md, Handler names): its kind, a
// readable hint of its target, and a hash of the kind and the target, the one setting of
// each kind's row in handler_kinds.h that says what it acts on. A job stores the name and is
// matched to its handler by it across reloads, so nothing positional and no other setting
// goes in.

#include <string>
#include <string_view>

#include "base/crypto.h"
#include "config/config.h"
#include "config/handler_kinds.h"
#include "config/yaml_reader.h"

namespace hookbox {

std::string_view HandlerTargetKey(std::string_view kind) {
  for (size_t i = 0; i < std::size(kHandlerKinds); ++i) {
    if (kHandlerKinds[i] == kind) return kHandlerTargets[i];
  }
  return {};
}

namespace {

// The target's value as bytes that differ whenever it differs: a scalar's text; a list's
// items, each behind its length (so ["a b"] and ["a", "b"] differ); anything else as YAML.
std::string TargetBytes(const YAML::Node& target) {
  if (!target) return "";
  if (target.IsScalar()) return target.Scalar();
  if (target.IsSequence()) {
    std::string bytes;
    for (const YAML::Node& item : target) {
      const std::string text = item.IsScalar() ? item.Scalar() : YAML::Dump(item);
      bytes += std::to_string(text.size()) + ":" + text + ",";
    }
    return bytes;
  }
  return YAML::Dump(target);
}

// A readable hint of the target for the name: the program's file name, the URL's host and
// port, the folder's last part; the characters a name may not have become "-".
std::string TargetHint(std::string_view kind, const YAML::Node& target) {
  std::string text;
  if (target && target.IsSequence() && target.size() > 0 && target[0].IsScalar()) {
    text = target[0].Scalar();
  } else if (target && target.IsScalar()) {
    text = target.Scalar();
  }
  if (kind == "exec" || kind == "file") {
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    text = text.substr(text.find_last_of('/') + 1);
  } else if (kind == "http") {
    size_t start = text.find("://");
    start = start == std::string::npos ? 0 : start + 3;
    text = text.substr(start, text.find_first_of("/?#", start) - start);
    text = text.substr(text.find('@') + 1);  // never user info
  } else {
    text.clear();  // sql: statements make no name
  }
  std::string hint;
  for (char c : text) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.';
    hint += plain ? c : '-';
    if (hint.size() == 32) break;
  }
  return hint;
}

}  // namespace

std::string DerivedHandlerName(std::string_view kind, const YamlTree& tree) {
  const YAML::Node& settings = tree.node;
  const std::string_view key = HandlerTargetKey(kind);
  const YAML::Node target =
      settings && settings.IsMap() && !key.empty() ? settings[std::string(key)] : YAML::Node();
  const std::string hash = Sha256Hex(std::string(kind) + '\0' + TargetBytes(target)).substr(0, 8);
  const std::string hint = TargetHint(kind, target);
  return std::string(kind) + "." + (hint.empty() ? "" : hint + ".") + hash;
}

}  // namespace hookbox
