// The one explicit table of handler kinds, built from the rows of config/handler_kinds.h
// (the list the config loader takes the kinds' keys from): each kind's key and its factory.
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

// Each kind's factory, declared from its row; handlers/<kind>/ defines it.
#define HOOKBOX_DECLARE_FACTORY(key, factory, target)                                \
  std::unique_ptr<Handler> factory(const YamlTree& config, const std::string& where, \
                                   std::vector<std::string>* errors);
HOOKBOX_HANDLER_KINDS(HOOKBOX_DECLARE_FACTORY)
#undef HOOKBOX_DECLARE_FACTORY

namespace {

#define HOOKBOX_TABLE_ROW(key, factory, target) {key, &factory},
constexpr std::pair<const char*, HandlerFactory> kKinds[] = {
    HOOKBOX_HANDLER_KINDS(HOOKBOX_TABLE_ROW)};
#undef HOOKBOX_TABLE_ROW

}  // namespace

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
            Set(*concurrency, reader.Count(node, where, 1, Handler::kMaxConcurrency,
                                           "expected a whole number of attempts at once, 1 to " +
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
        // A spec built by hand may have no settings: the factory says "expected a mapping".
        static const YamlTree kNoSettings;
        std::unique_ptr<Handler> handler =
            factory(spec.config ? *spec.config : kNoSettings, where, errors);
        if (!handler) continue;
        set.longest_timeout = std::max(set.longest_timeout, handler->timeout());
        set.total_concurrency += handler->concurrency();
        set.by_endpoint[ep.name][spec.name] = std::move(handler);
      }
    }
  }
  return set;
}

}  // namespace hookbox
