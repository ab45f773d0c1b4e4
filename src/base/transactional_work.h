// The typed extension point for a handler whose side effect runs inside the inbox's own
// transaction, the one that records its job's finish (or, on a sync endpoint, the accept),
// so that the effect and the record of it commit together or not at all.
//
// A handler offers one through Handler::transactional(). The core (work/, receive/, cli/)
// only carries it from the handler to the inbox and never looks inside; the inbox lends it
// a WorkTransaction to run statements on, inside a savepoint of its own. What the
// statements are, and which of the event's values they may name, is the kind's alone
// (handlers/<kind>/), so a kind that needs the transaction is its folder plus its row, as
// any other kind is.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/job.h"
#include "base/status.h"

namespace hookbox {

// What a statement's named parameter is bound to: text, or (text null) an integer.
struct StatementValue {
  const std::string* text = nullptr;
  int64_t number = 0;
};

// The value for one of a statement's named parameters, by its name as written (":name"),
// or nullopt for a name the work does not bind (it runs as NULL).
using StatementParams = std::function<std::optional<StatementValue>(std::string_view name)>;

// What the inbox lends a TransactionalWork for one event: statements in the inbox
// database's own language, run in the inbox's open transaction.
class WorkTransaction {
 public:
  virtual Status Execute(const std::string& statement, const StatementParams& params) = 0;

 protected:
  ~WorkTransaction() = default;
};

// What the inbox lends a TransactionalWork once at start (Inbox::PrepareWork).
class WorkSetup {
 public:
  // Runs `statement` now, with no parameters (CREATE TABLE IF NOT EXISTS ...). Replicas
  // starting at once run their setups one at a time.
  virtual Status Execute(const std::string& statement) = 0;
  // Compiles `statement`, which runs later per event, without running it, so that a mistake
  // stops the start instead of failing every event.
  virtual Status Check(const std::string& statement) = 0;

 protected:
  ~WorkSetup() = default;
};

class TransactionalWork {
 public:
  virtual ~TransactionalWork() = default;
  // The kind's key in config.yaml, which the inbox puts before a failure's detail and in
  // the attempt it records for a sync endpoint's run.
  virtual std::string_view kind() const = 0;
  // Once at start, before any event.
  virtual Status Setup(WorkSetup& setup) const = 0;
  // For one event, inside the transaction. Not ok: the inbox rolls back what it ran and
  // records a failed attempt (with this error) in place of the job's done.
  virtual Status Run(WorkTransaction& tx, const HandlerEvent& event) const = 0;
};

}  // namespace hookbox
