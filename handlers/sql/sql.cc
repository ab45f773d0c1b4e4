// The `sql` handler: validation at load, then nothing but the SqlWork it hands the inbox,
// which binds the event's values by name as it runs each statement.
// Each statement is scanned once, skipping quoted text ('...', "...", `...`, [...]) and
// comments, for the mistakes that would otherwise surface per event, or never: a named
// parameter the inbox does not bind (it would run as NULL), a second statement in one item
// (a prepare compiles only the first; the rest would be dropped silently), and transaction
// control (BEGIN, COMMIT, a SAVEPOINT...): the statements run inside the inbox's own
// transaction, so a COMMIT among them would commit it partway (with a sync endpoint, the
// accepts grouped with it, before the handler's other statements and its row's settling).
#include "handlers/sql/sql.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>

#include "base/ascii.h"
#include "base/status_macros.h"
#include "config/yaml_reader.h"

namespace hookbox {
namespace {

constexpr auto kTimeout = std::chrono::seconds(30);

// The named parameters a statement may use, and the event's value for one (nullopt: not one
// of them). The reader refuses any other name at load. :generation is the job's run, as
// exec's HOOKBOX_REPLAY_GENERATION and http's X-Hookbox-Replay: 0 for the first, n after n
// replays. It is a number (bound as an integer, so that `:generation = 0` holds on SQLite,
// which does not equate the text '0' with 0).
constexpr std::string_view kSqlParameters[] = {":event_id",    ":endpoint",   ":type",
                                               ":resource",    ":sequence",   ":body",
                                               ":received_at", ":generation", ":traceparent"};

std::optional<StatementValue> SqlParameter(const HandlerEvent& e, std::string_view name) {
  if (name == ":event_id") return StatementValue{&e.event_id};
  if (name == ":endpoint") return StatementValue{&e.endpoint};
  if (name == ":type") return StatementValue{&e.event_type};
  if (name == ":resource") return StatementValue{&e.resource_id};
  if (name == ":sequence") return StatementValue{&e.sequence};
  if (name == ":body") return StatementValue{&e.body};
  if (name == ":received_at") return StatementValue{&e.received_at};
  if (name == ":generation") return StatementValue{nullptr, e.generation};
  if (name == ":traceparent") return StatementValue{&e.traceparent};
  return std::nullopt;
}

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// What one statement holds outside quotes and comments.
struct Scan {
  std::string first_word;               // the statement's first word, as written
  std::vector<std::string> parameters;  // ":name", in order, repeats kept
  bool more_statements = false;         // something after a ";"
  bool unterminated = false;            // a quote that never closes
};

Scan ScanStatement(std::string_view sql) {
  Scan scan;
  bool ended = false;  // a ";" was seen
  bool seen_token = false;
  size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    const char next = i + 1 < sql.size() ? sql[i + 1] : '\0';
    if (c == '-' && next == '-') {
      i = std::min(sql.find('\n', i), sql.size());
      continue;
    }
    if (c == '/' && next == '*') {
      size_t close = sql.find("*/", i + 2);
      i = close == std::string_view::npos ? sql.size() : close + 2;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (ended) {
      scan.more_statements = true;
      return scan;
    }
    if (!seen_token) {  // the first thing that is not a space or a comment
      seen_token = true;
      size_t end = i;
      while (end < sql.size() && IsWordChar(sql[end])) ++end;
      scan.first_word = sql.substr(i, end - i);
    }
    if (c == '\'' || c == '"' || c == '`' || c == '[') {
      // A doubled quote ('it''s') closes and reopens: the same text either way.
      size_t close = sql.find(c == '[' ? ']' : c, i + 1);
      if (close == std::string_view::npos) {
        scan.unterminated = true;
        return scan;
      }
      i = close + 1;
    } else if (c == ';') {
      ended = true;
      ++i;
    } else if (c == ':' && next == ':') {  // PostgreSQL's cast, x::text
      i += 2;
      while (i < sql.size() && IsWordChar(sql[i])) ++i;
    } else if (c == ':' && IsWordChar(next)) {
      size_t end = i + 1;
      while (end < sql.size() && IsWordChar(sql[end])) ++end;
      scan.parameters.emplace_back(sql.substr(i, end - i));
      i = end;
    } else {
      ++i;
    }
  }
  return scan;
}

// Whether `word` begins a transaction-control statement (SQLite's and PostgreSQL's: END is
// SQLite's COMMIT, ABORT and START TRANSACTION PostgreSQL's).
bool IsTransactionControl(const std::string& word) {
  static constexpr const char* kWords[] = {"BEGIN",     "COMMIT",  "END",   "ROLLBACK",
                                           "SAVEPOINT", "RELEASE", "START", "ABORT"};
  return std::any_of(std::begin(kWords), std::end(kWords),
                     [&](const char* k) { return EqualsIgnoringAsciiCase(word, k); });
}

std::string KnownParameters() {
  std::string names;
  for (std::string_view p : kSqlParameters) names += (names.empty() ? "" : ", ") + std::string(p);
  return names;
}

// Whether `text` holds anything but white space: a statement, perhaps.
bool IsStatementText(std::string_view text) {
  return !std::all_of(text.begin(), text.end(), [](char c) { return std::isspace(c & 0xff); });
}

// Reads a list of statements into `out`, reporting every problem. `with_event`: whether the
// event's parameters are bound when they run.
void ReadStatements(YamlReader& reader, const YAML::Node& node, const std::string& at,
                    bool with_event, std::vector<std::string>& out) {
  reader.ReadList(
      node, at, /*non_empty=*/with_event,
      with_event ? "a non-empty list of SQL statements" : "a list of SQL statements",
      [&](const YAML::Node& item, const std::string& item_at, size_t) {
        const auto text = reader.Scalar(item, item_at, "an SQL statement", IsStatementText);
        if (!text) return;
        const Scan scan = ScanStatement(*text);
        if (scan.unterminated) reader.ErrorAt(item, item_at, "a quote is never closed");
        if (scan.more_statements) {
          reader.ErrorAt(item, item_at, "holds more than one statement; give each its own item");
        }
        if (IsTransactionControl(scan.first_word)) {
          reader.ErrorAt(item, item_at,
                         scan.first_word +
                             " is transaction control: the statements run inside hookbox's own "
                             "transaction, which it begins and commits");
        }
        std::set<std::string> reported;
        for (const std::string& p : scan.parameters) {
          if (!reported.insert(p).second) continue;
          if (!with_event) {
            reader.ErrorAt(item, item_at,
                           "parameter " + p + " in setup, which runs once at start with no event");
          } else if (std::find(std::begin(kSqlParameters), std::end(kSqlParameters), p) ==
                     std::end(kSqlParameters)) {
            reader.ErrorAt(item, item_at,
                           "unknown parameter " + p + " (known: " + KnownParameters() + ")");
          }
        }
        out.push_back(*text);
      });
}

// What the reader read at load (a KindSettings, handlers/handler.h).
struct SqlSpec final : KindSettings {
  SqlWork work;
};

class SqlHandler final : public Handler {
 public:
  explicit SqlHandler(SqlWork work) : work_(std::move(work)) {}

  // The worker hands transactional() to the inbox instead; reaching this is harmless.
  HandlerResult Run(const HandlerEvent&) override {
    return {Outcome::kOk, "sql runs in the inbox transaction", {}};
  }
  std::chrono::milliseconds timeout() const override { return kTimeout; }
  const TransactionalWork* transactional() const override { return &work_; }

 private:
  const SqlWork work_;
};

}  // namespace

Status SqlWork::Setup(WorkSetup& db) const {
  for (const std::string& statement : setup) RETURN_IF_ERROR(db.Execute(statement));
  for (const std::string& statement : statements) RETURN_IF_ERROR(db.Check(statement));
  return Status::Ok();
}

Status SqlWork::Run(WorkTransaction& tx, const HandlerEvent& event) const {
  const StatementParams params = [&event](std::string_view name) {
    return SqlParameter(event, name);
  };
  for (const std::string& statement : statements) RETURN_IF_ERROR(tx.Execute(statement, params));
  return Status::Ok();
}

std::shared_ptr<const KindSettings> ReadSqlSettings(YamlReader& reader, const YamlTree& settings,
                                                    const std::string& where,
                                                    const LoadOptions& options) {
  const size_t before = reader.error_count();
  auto spec = std::make_shared<SqlSpec>();
  const bool is_map = reader.ReadMapping(
      settings.node, where,
      {
          {"setup",
           [&](auto& n, auto& at) { ReadStatements(reader, n, at, false, spec->work.setup); }},
          {"statements",
           [&](auto& n, auto& at) { ReadStatements(reader, n, at, true, spec->work.statements); }},
      });
  if (is_map) reader.Require(settings.node, where, {"statements"});
  if (reader.error_count() != before) return nullptr;
  return spec;
}

std::unique_ptr<Handler> MakeSqlHandler(const KindSettings& settings, const std::string& where,
                                        std::vector<std::string>* errors) {
  const auto* spec = KindSpec<SqlSpec>(settings, where, "an sql handler's", errors);
  if (spec == nullptr) return nullptr;
  return std::make_unique<SqlHandler>(spec->work);
}

}  // namespace hookbox
