// The one mapping from a Status to an HTTP status, for every listener that answers with
// one: the receiver's refusals (receive/receiver.cc) and the console's pages over a failed
// inbox call (console/console.cc). In base/ so that both use it without including each
// other. A refusal that is not a failed Status (a route's 404 or 405, a guard's 401 or 403)
// writes its status where it decides it.
#pragma once

#include "base/status.h"

namespace hookbox {

// kConflict by its kind: 422 for "this id is already stored with another body" (strict_body,
// ConflictKind::kBodyDiffers: the request as sent can never be taken); 409 for a state that
// refuses the step for now (kEventBusy: a job of the event is running, a sync duplicate's
// wait ran out or a clear was refused; kLeaseLost). The console answers a retry with no dead
// job (an InvalidArgument) 409 itself: there it is the row's state, not a bad request.
inline int HttpStatusFor(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk:
      return 200;
    case Status::Code::kInvalidArgument:
      return 400;
    case Status::Code::kNotFound:
      return 404;
    case Status::Code::kUnauthenticated:
      return 401;
    case Status::Code::kConflict:
      return s.conflict() == Status::ConflictKind::kBodyDiffers ? 422 : 409;
    case Status::Code::kUnavailable:
      return 503;
    case Status::Code::kInternal:
      return 500;
  }
  return 500;
}

}  // namespace hookbox
