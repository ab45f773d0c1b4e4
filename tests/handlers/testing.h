// Shared by the handler tests: reading and building a handler of a kind from YAML text
// through the registry (as a load and BuildHandlers do), a stored event, and a temporary
// directory that removes itself.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/yaml_reader.h"
#include "handlers/handler.h"

namespace hookbox::testing {
// An inline namespace of its own: tests/integration/daemon.h has another TempDir in
// hookbox::testing, and test_ops links a file of each (tests/ops/*fdlimit*); two inline
// classes of one name in one binary break the one-definition rule (the linker keeps one
// class's constructor for both, and the other's callers crash). `testing::TempDir` still
// names this one wherever this header is included.
inline namespace handler_harness {

struct Built {
  std::unique_ptr<Handler> handler;
  std::vector<std::string> errors;
  std::string Errors() const {
    std::string all;
    for (const std::string& e : errors) all += e + "\n";
    return all;
  }
  bool HasError(std::string_view needle) const {
    for (const std::string& e : errors) {
      if (e.find(needle) != std::string::npos) return true;
    }
    return false;
  }
};

// The handler of `kind` read from `yaml` (the node under the kind key), with where = "h", and
// built; read as serve reads it (secrets resolved, host checks) unless `options` say otherwise.
inline Built Build(const std::string& kind, const std::string& yaml,
                   LoadOptions options = {.resolve_secrets = true, .host_checks = true}) {
  Built built;
  if (FindHandlerKind(kind) == nullptr) {
    built.errors.push_back("no kind " + kind);
    return built;
  }
  built.handler = ReadAndBuildHandler(kind, ParseYamlTree(yaml), "h", options, &built.errors);
  return built;
}

inline HandlerEvent Event(std::string event_id = "evt_1", std::string body = R"({"a":1})") {
  HandlerEvent e;
  e.endpoint = "ep";
  e.event_id = std::move(event_id);
  e.event_type = "invoice.paid";
  e.body = std::move(body);
  e.headers_json = "{}";
  e.received_at = "2026-01-02T03:04:05Z";
  return e;
}

// YAML's double-quoted form of `text` (escapes keep it one scalar whatever it holds).
inline std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

class TempDir final {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hookbox-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace handler_harness
}  // namespace hookbox::testing
