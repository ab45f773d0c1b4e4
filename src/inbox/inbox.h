// The durable inbox: the one interface through which hookbox reaches storage. Backends
// (sqlite/, later postgres/) implement it; nothing else runs SQL. The inbox knows no HTTP
// and no provider: it stores Events and answers with Verdicts.
//
// Contract of Accept(): one transaction that either stores everything for the event (the
// inbox row, the sequence gate's advance, one job per handler) or nothing. When it returns
// a verdict the transaction is durable (committed with the configured synchronous level).
// Any storage failure returns Status::Unavailable and leaves no trace of the event.
//
// Thread-safety: every method may be called from any thread at the same time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ops/clock.h"

namespace hookbox {

// What Accept() stores: an event that passed verification and identification.
struct Event {
  std::string endpoint;
  std::string event_id;
  std::string id_source;    // "header:X-GitHub-Delivery", "body:/id" or "sha256"
  std::string event_type;
  std::string resource_id;  // "" = no ordering for this event
  std::string sequence;     // as delivered
  std::optional<int64_t> sequence_key;  // comparable form; nullopt = no ordering
  std::string body_sha256;  // hex
  std::string headers_json;
  std::string body;
  std::vector<std::string> handlers;  // one job each; empty -> stored as `ignored`
  bool strict_body = false;           // same id, other body -> Conflict instead of duplicate
  TimePoint received_at;
};

enum class Verdict { kAccepted, kDuplicate, kStale, kIgnored };
const char* VerdictName(Verdict v);

struct AcceptResult {
  Verdict verdict;
  bool body_changed = false;  // duplicate whose body differs from the stored one
};

// An inbox row as the CLI shows it.
struct InboxRow {
  int64_t id = 0;
  std::string endpoint, event_id, id_source, event_type, resource_id, sequence;
  std::string body_sha256, headers_json, status, received_at, processed_at;
  int64_t duplicates = 0;
  std::string last_duplicate_at;
  std::string body;  // filled by Show() only
};

struct AttemptRow {
  int64_t number = 0;
  std::string started_at, finished_at, outcome, detail;
};

struct JobRow {
  int64_t id = 0;
  std::string handler, status, next_attempt_at, lease_owner, lease_until, last_error;
  int64_t attempts = 0;
  std::vector<AttemptRow> attempt_rows;
};

struct InboxDetail {
  InboxRow row;
  std::vector<JobRow> jobs;
};

struct ListFilter {
  std::string endpoint;  // "" = all
  std::string status;    // "" = all
  std::string since;     // RFC 3339 (FormatTime) lower bound on received_at; "" = all
  int limit = 100;
};

// Counts of inbox rows by endpoint, then status.
using InboxStats = std::map<std::string, std::map<std::string, int64_t>>;

class Inbox {
 public:
  virtual ~Inbox() = default;

  virtual StatusOr<AcceptResult> Accept(const Event& event) = 0;

  // Newest first.
  virtual StatusOr<std::vector<InboxRow>> List(const ListFilter& filter) = 0;
  // NotFound when there is no such row.
  virtual StatusOr<InboxDetail> Show(const std::string& endpoint,
                                     const std::string& event_id) = 0;
  // Deletes the row with its jobs and attempts, so the next delivery of the event is accepted
  // as new. NotFound when there is no such row.
  virtual Status Clear(const std::string& endpoint, const std::string& event_id) = 0;
  virtual StatusOr<InboxStats> Stats() = 0;
  // Ok when the database answers a trivial query (for /readyz).
  virtual Status Ping() = 0;
};

struct InboxOptions {
  std::string database;        // file path (or, later, postgresql://...)
  bool durable = true;         // durability: full (fsync at every commit)
  bool create = true;          // create the file if missing (serve, migrate)
};

// Opens the backend the database string names and brings its schema up to date.
// Unavailable when the database cannot be opened or migrated.
StatusOr<std::unique_ptr<Inbox>> OpenInbox(const InboxOptions& options,
                                           std::vector<std::string>* applied_migrations = nullptr);

}  // namespace hookbox
