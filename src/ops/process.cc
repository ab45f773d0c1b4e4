// ProtectDaemonProcess (process.h): two prctl calls.
#include "ops/process.h"

#include <sys/prctl.h>

#include <cerrno>
#include <cstring>

namespace hookbox {

Status ProtectDaemonProcess() {
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return Status::Internal("cannot make the process non-dumpable", std::strerror(errno));
  }
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    return Status::Internal("cannot make the process a child subreaper", std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace hookbox
