// The `sql` handler kind: SQL that runs in the inbox database, inside the transaction that
// marks the job done, so the side effect and the record that it happened commit together.
// The inbox prepares and runs it (handlers know no database); this kind only validates it at
// load and hands it over through Handler::sql(). Config: {setup: [SQL...], statements: [SQL...]}.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "handlers/handler.h"

namespace hookbox {

// The kind's reader (handlers/registry.cc, at load) and factory. Each list item is one
// statement; `statements` may use the named parameters :event_id :endpoint :type :resource
// :sequence :body :received_at, `setup` (run once at start, with no event) none.
std::shared_ptr<const KindSettings> ReadSqlSettings(YamlReader& reader, const YamlTree& settings,
                                                    const std::string& where,
                                                    const LoadOptions& options);
std::unique_ptr<Handler> MakeSqlHandler(const KindSettings& settings, const std::string& where,
                                        std::vector<std::string>* errors);

}  // namespace hookbox
