// HttpStatusFor (base/http_status.h): the one mapping from a Status to an HTTP status, which
// the receiver and the console both answer by.
#include "base/http_status.h"

#include <catch2/catch.hpp>

using namespace hookbox;

TEST_CASE("HttpStatusFor: each code has its one HTTP status") {
  CHECK(HttpStatusFor(Status::Ok()) == 200);
  CHECK(HttpStatusFor(Status::InvalidArgument("x")) == 400);
  CHECK(HttpStatusFor(Status::Unauthenticated("x")) == 401);
  CHECK(HttpStatusFor(Status::NotFound("x")) == 404);
  // strict_body: another body, same id, is never taken; a busy event or a lost lease is a
  // state that passes.
  CHECK(HttpStatusFor(Status::Conflict(Status::ConflictKind::kBodyDiffers, "x")) == 422);
  CHECK(HttpStatusFor(Status::Conflict(Status::ConflictKind::kLeaseLost, "x")) == 409);
  CHECK(HttpStatusFor(Status::Conflict(Status::ConflictKind::kEventBusy, "x")) == 409);
  CHECK(HttpStatusFor(Status::Internal("x")) == 500);
  CHECK(HttpStatusFor(Status::Unavailable("x")) == 503);
}
