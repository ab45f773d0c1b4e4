// Status (base/status.h): a conflict and an Unavailable say which one they are, so that code
// telling them apart reads the kind, never the message; the kind changes neither the code nor
// the HTTP status (base/http_status.h) they answer with.
#include "base/status.h"

#include <catch2/catch.hpp>

#include "base/http_status.h"

using namespace hookbox;

TEST_CASE("Status: a conflict carries its kind; other codes have none") {
  using Kind = Status::ConflictKind;
  for (Kind kind : {Kind::kBodyDiffers, Kind::kLeaseLost, Kind::kEventBusy}) {
    const Status s = Status::Conflict(kind, "x", "y");
    CHECK(s.code() == Status::Code::kConflict);
    CHECK(s.conflict() == kind);
    CHECK(s.unavailable() == Status::UnavailableKind::kNone);
    CHECK(s.ToString() == "x: y");
    CHECK(HttpStatusFor(s) == (kind == Kind::kBodyDiffers ? 422 : 409));
  }
  CHECK(Status::Ok().conflict() == Kind::kNone);
  CHECK(Status::Unavailable("x").conflict() == Kind::kNone);
  CHECK(Status::Internal("x").conflict() == Kind::kNone);
}

TEST_CASE("Status: an Unavailable is a fault unless it says busy") {
  using Kind = Status::UnavailableKind;
  const Status fault = Status::Unavailable("storage unavailable", "disk full");
  CHECK(fault.code() == Status::Code::kUnavailable);
  CHECK(fault.unavailable() == Kind::kFault);
  const Status busy = Status::Unavailable(Kind::kBusy, "storage busy", "database is locked");
  CHECK(busy.code() == Status::Code::kUnavailable);
  CHECK(busy.unavailable() == Kind::kBusy);
  CHECK(busy.conflict() == Status::ConflictKind::kNone);
  CHECK(busy.ToString() == "storage busy: database is locked");
  CHECK(HttpStatusFor(busy) == 503);
  CHECK(HttpStatusFor(fault) == 503);
  CHECK(Status::Ok().unavailable() == Kind::kNone);
  CHECK(Status::Internal("x").unavailable() == Kind::kNone);
  CHECK(Status::Conflict(Status::ConflictKind::kLeaseLost, "x").unavailable() == Kind::kNone);
}
