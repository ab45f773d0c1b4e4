// The one explicit table of handler kinds, built from the rows of config/handler_kinds.h
// (the list the config loader takes the kinds' keys from): each kind's key, its reader (for
// the loader, KindReaders) and its factory.
// A static library link can silently drop self-registering static initialisers; a table
// cannot be dropped, and a duplicate name is a compile-time-visible mistake. Also here: what
// every kind shares, building a config's handlers (BuildHandlers) and the `concurrency` row
// of the kinds' tables of keys (ConcurrencyField).
#include <algorithm>
#include <utility>

#include "config/handler_kinds.h"
#include "config/yaml_reader.h"
#include "handlers/handler.h"

namespace hookbox {

// Each kind's reader and factory, declared from its row; handlers/<kind>/ defines them.
#define HOOKBOX_DECLARE_KIND(key, reader, factory, target)                                 \
  std::shared_ptr<const KindSettings> reader(YamlReader& yaml, const YamlTree& settings,   \
                                             const std::string& where,                     \
                                             const LoadOptions& options);                  \
  std::unique_ptr<Handler> factory(const KindSettings& settings, const std::string& where, \
                                   std::vector<std::string>* errors);
HOOKBOX_HANDLER_KINDS(HOOKBOX_DECLARE_KIND)
#undef HOOKBOX_DECLARE_KIND

namespace {

#define HOOKBOX_TABLE_ROW(key, reader, factory, target) {key, &factory},
constexpr std::pair<const char*, HandlerFactory> kKinds[] = {
    HOOKBOX_HANDLER_KINDS(HOOKBOX_TABLE_ROW)};
#undef HOOKBOX_TABLE_ROW

#define HOOKBOX_READER_ROW(key, reader, factory, target) &reader,
constexpr HandlerKindReaders kReaders = {{HOOKBOX_HANDLER_KINDS(HOOKBOX_READER_ROW)}};
#undef HOOKBOX_READER_ROW

}  // namespace

const HandlerKindReaders& KindReaders() { return kReaders; }

HandlerFactory FindHandlerKind(const std::string& kind) {
  for (const auto& [name, factory] : kKinds) {
    if (kind == name) return factory;
  }
  return nullptr;
}

std::vector<std::string> HandlerKinds() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : kKinds) names.emplace_back(name);
  return names;
}

Handler* HandlerSet::Find(const std::string& endpoint, const std::string& handler) const {
  auto e = by_endpoint.find(endpoint);
  if (e == by_endpoint.end()) return nullptr;
  auto h = e->second.find(handler);
  return h == e->second.end() ? nullptr : h->second.get();
}

YamlField ConcurrencyField(YamlReader& reader, int* concurrency) {
  return {"concurrency", [&reader, concurrency](const YAML::Node& node, const std::string& where) {
            Set(*concurrency, reader.Int(node, where, 1, Handler::kMaxConcurrency,
                                         "a whole number of attempts at once, 1 to " +
                                             std::to_string(Handler::kMaxConcurrency)));
          }};
}

HandlerSet BuildHandlers(const Config& config, std::vector<std::string>* errors) {
  HandlerSet set;
  for (size_t i = 0; i < config.endpoints.size(); ++i) {
    const Endpoint& ep = config.endpoints[i];
    for (size_t r = 0; r < ep.routes.size(); ++r) {
      for (size_t h = 0; h < ep.routes[r].handlers.size(); ++h) {
        const HandlerSpec& spec = ep.routes[r].handlers[h];
        // The same handler in another route (the loader made sure the settings agree):
        // one handler, one job per event, one set of slots.
        if (set.by_endpoint[ep.name].count(spec.name)) continue;
        const std::string where = "endpoints[" + std::to_string(i) + "].routes[" +
                                  std::to_string(r) + "].handlers[" + std::to_string(h) + "]." +
                                  spec.kind;
        HandlerFactory factory = FindHandlerKind(spec.kind);
        if (!factory) {
          errors->push_back(where + ": unknown handler kind");
          continue;
        }
        // A config loaded without the kinds' readers (or a spec built by hand): nothing was
        // checked, so nothing is built.
        if (!spec.settings) {
          errors->push_back(where + ": the settings were not read at load");
          continue;
        }
        std::unique_ptr<Handler> handler = factory(*spec.settings, where, errors);
        if (!handler) continue;
        set.longest_timeout = std::max(set.longest_timeout, handler->timeout());
        set.total_concurrency += handler->concurrency();
        set.by_endpoint[ep.name][spec.name] = std::move(handler);
      }
    }
  }
  return set;
}

std::unique_ptr<Handler> ReadAndBuildHandler(const std::string& kind, const YamlTree& settings,
                                             const std::string& where, const LoadOptions& options,
                                             std::vector<std::string>* errors) {
  for (size_t row = 0; row < std::size(kKinds); ++row) {
    if (kind != kKinds[row].first) continue;
    const size_t before = errors->size();
    YamlReader reader = YamlReader::Plain(errors);
    std::shared_ptr<const KindSettings> read;
    try {
      read = kReaders.read[row](reader, settings, where, options);
    } catch (const YAML::Exception& e) {
      reader.Error(where, e.what());
    }
    if (!read || errors->size() != before) return nullptr;
    return kKinds[row].second(*read, where, errors);
  }
  errors->push_back(where + ": unknown handler kind");
  return nullptr;
}

}  // namespace hookbox
