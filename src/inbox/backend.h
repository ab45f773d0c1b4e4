// What the two backends (sqlite/, postgres/) share besides the Inbox contract: the lease
// token a claim writes, and the job status a finish records. Each backend keeps only its SQL
// and its connection handling; this is the rest. (VerdictName, for every caller, is
// declared in inbox.h and defined with these in backend.cc.)
#pragma once

#include <string>

#include "inbox/inbox.h"

namespace hookbox {

// A fresh random token (32 hex digits) for a claim's lease: a finish moves the job only if
// the token it holds is still the job's (the compare-and-swap that fences an old owner).
std::string NewLeaseToken();

// The jobs.status a finish records for what comes next: done, pending (a retry) or dead.
const char* JobStatusFor(JobOutcome::Next next);

}  // namespace hookbox
