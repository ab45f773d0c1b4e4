// The `sql` handler kind: SQL that runs in the inbox database, inside the transaction that
// marks the job done, so the side effect and the record that it happened commit together.
// The inbox runs it (handlers know no database): this kind validates the statements at load
// and hands them over as its TransactionalWork (base/transactional_work.h), which names the
// event's values the statements may use. Config: {setup: [SQL...], statements: [SQL...]}.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "handlers/handler.h"

namespace hookbox {

// The kind's work: `setup` once at start (the inbox checks `statements` then too), and
// `statements` per event inside the transaction that marks its job done, with the event's
// values bound to the named parameters :event_id :endpoint :type :resource :sequence :body
// :received_at :generation :traceparent.
struct SqlWork final : TransactionalWork {
  std::vector<std::string> setup;
  std::vector<std::string> statements;

  std::string_view kind() const override { return "sql"; }
  Status Setup(WorkSetup& db) const override;
  Status Run(WorkTransaction& tx, const HandlerEvent& event) const override;
};

// The kind's reader (handlers/registry.cc, at load) and factory. Each list item is one
// statement; `statements` may use SqlWork's named parameters, `setup` (run once at start,
// with no event) none.
std::shared_ptr<const KindSettings> ReadSqlSettings(YamlReader& reader, const YamlTree& settings,
                                                    const std::string& where,
                                                    const LoadOptions& options);
std::unique_ptr<Handler> MakeSqlHandler(const KindSettings& settings, const std::string& where,
                                        std::vector<std::string>* errors);

}  // namespace hookbox
