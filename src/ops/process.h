// Process-wide settings `hookbox serve` makes first, before it reads a secret or starts a
// handler:
//
// - Not dumpable (PR_SET_DUMPABLE 0). The daemon holds webhook secrets in its memory and,
//   for env: secrets, in its environment, and its descriptors reach the inbox. A dumpable
//   process's /proc/<pid>/environ, mem, fd/ and maps are open to every process of the same
//   user, which is what `exec` handlers run as; a non-dumpable one's belong to root, and
//   only a process with CAP_SYS_PTRACE may read them. The daemon still reads its own
//   /proc/self and its secret files (a SIGHUP reload reads them again). env: secrets stay
//   in its environment, since a reload reads them there too (and unsetenv would not clear
//   the copy /proc/<pid>/environ shows); non-dumpable, that copy is root's alone. What is
//   lost: core dumps, and attaching a debugger as the same user.
// - A child subreaper (PR_SET_CHILD_SUBREAPER 1): what an `exec` handler started and left
//   behind is reparented to the daemon instead of init, for the child watch to kill
//   (handlers/exec/children.h).
#pragma once

#include "base/status.h"

namespace hookbox {

// Both settings above; an error names the one that failed.
Status ProtectDaemonProcess();

}  // namespace hookbox
