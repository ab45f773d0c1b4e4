// Errors as values. Every fallible step on the request path returns a Status (or a
// StatusOr<T>) instead of throwing; the code says what kind of failure it was, the message
// says what failed and about what. The mapping from codes to HTTP answers and exit codes lives
// in exactly one place each (HttpStatusFor in base/http_status.h, ExitCodeFor in
// cli/cli.cc). A conflict, and an Unavailable that is contention, also say which one they
// are (ConflictKind, UnavailableKind): code that tells them apart reads that, never the
// message.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace hookbox {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk,
    kInvalidArgument,  // bad config, bad CLI input, malformed request parts
    kNotFound,         // unknown endpoint, unknown event id
    kUnauthenticated,  // any signature problem
    kConflict,         // the stored state refuses the step: see ConflictKind
    kUnavailable,      // storage could not commit (disk full, busy past timeout)
    kInternal,
  };

  // Which conflict a kConflict is; kNone for every other code.
  enum class ConflictKind {
    kNone,
    kBodyDiffers,  // strict_body: the event id is stored with another body
    kLeaseLost,    // a job's lease token no longer holds: another owner runs the job
    kEventBusy,    // a job of the event is running: leased, or locked by its request
  };

  // Which unavailability a kUnavailable is; kNone for every other code.
  enum class UnavailableKind {
    kNone,
    kFault,  // the database cannot do it (down, disk full, I/O error)
    kBusy,   // contention: a lock was not granted within its wait; retried, not a fault
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string what, std::string about = {}) {
    return Status(Code::kInvalidArgument, std::move(what), std::move(about));
  }
  static Status NotFound(std::string what, std::string about = {}) {
    return Status(Code::kNotFound, std::move(what), std::move(about));
  }
  static Status Unauthenticated(std::string what, std::string about = {}) {
    return Status(Code::kUnauthenticated, std::move(what), std::move(about));
  }
  static Status Conflict(ConflictKind why, std::string what, std::string about = {}) {
    Status s(Code::kConflict, std::move(what), std::move(about));
    s.conflict_ = why;
    return s;
  }
  static Status Unavailable(std::string what, std::string about = {}) {
    return Unavailable(UnavailableKind::kFault, std::move(what), std::move(about));
  }
  static Status Unavailable(UnavailableKind why, std::string what, std::string about = {}) {
    Status s(Code::kUnavailable, std::move(what), std::move(about));
    s.unavailable_ = why;
    return s;
  }
  static Status Internal(std::string what, std::string about = {}) {
    return Status(Code::kInternal, std::move(what), std::move(about));
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  ConflictKind conflict() const { return conflict_; }
  UnavailableKind unavailable() const { return unavailable_; }
  // "what" alone: safe to show to a remote client.
  const std::string& what() const { return what_; }
  // "what: about": for logs and the operator's terminal.
  std::string ToString() const {
    if (ok()) return "ok";
    return about_.empty() ? what_ : what_ + ": " + about_;
  }

 private:
  Status(Code code, std::string what, std::string about)
      : code_(code), what_(std::move(what)), about_(std::move(about)) {}

  Code code_ = Code::kOk;
  ConflictKind conflict_ = ConflictKind::kNone;
  UnavailableKind unavailable_ = UnavailableKind::kNone;
  std::string what_;
  std::string about_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace hookbox
