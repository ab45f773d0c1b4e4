// ProtectDaemonProcess (ops/process.h), each time in a forked child of the test process, whose
// own settings it must not change: afterwards the child is not dumpable and is a child
// subreaper (a grandchild's orphan is reparented to it, not to init); and when either prctl is
// refused (a seccomp filter in the child makes it fail with EPERM), the error names the
// setting that failed. [fork]: TSan cannot follow a multi-threaded process across fork.
#include "ops/process.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstddef>
#include <functional>
#include <string>

using namespace hookbox;

namespace {

// Runs `body` in a forked child and returns what it wrote to its pipe ("" if it died).
std::string InForkedChild(const std::function<std::string()>& body) {
  int report[2];
  REQUIRE(::pipe2(report, O_CLOEXEC) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(report[0]);
    const std::string text = body();
    (void)!::write(report[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(report[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(report[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  ::close(report[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  return text;
}

// Makes prctl(option, ...) fail with EPERM in this process from now on.
bool RefusePrctl(int option) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(option), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

std::string Describe(const Status& status) {
  if (status.ok()) return "ok";
  return (status.code() == Status::Code::kInternal ? "internal: " : "other: ") + status.ToString();
}

}  // namespace

TEST_CASE("ProtectDaemonProcess: not dumpable, and a subreaper of orphans", "[process][fork]") {
  const std::string report = InForkedChild([] {
    std::string seen = "before: dumpable " + std::to_string(::prctl(PR_GET_DUMPABLE)) + "\n";
    seen += Describe(ProtectDaemonProcess()) + "\n";
    seen += "after: dumpable " + std::to_string(::prctl(PR_GET_DUMPABLE)) + "\n";
    int subreaper = 0;
    ::prctl(PR_GET_CHILD_SUBREAPER, &subreaper);
    seen += "subreaper " + std::to_string(subreaper) + "\n";
    // A grandchild that leaves its own child behind: the orphan is reparented to us, and we
    // can wait for it (its exit code says whether it saw us as its parent).
    const pid_t self = ::getpid();
    const pid_t middle = ::fork();
    if (middle == 0) {
      if (::fork() == 0) {
        for (int i = 0; i < 10'000 && ::getppid() != self; ++i) ::usleep(1000);
        ::_exit(::getppid() == self ? 7 : 1);
      }
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(middle, &status, 0);
    const pid_t orphan = ::waitpid(-1, &status, 0);
    seen += "orphan reaped " + std::to_string(orphan > 0) + ", exit " +
            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "\n";
    return seen;
  });
  CHECK(report ==
        "before: dumpable 1\n"
        "ok\n"
        "after: dumpable 0\n"
        "subreaper 1\n"
        "orphan reaped 1, exit 7\n");
  // The test process itself is unchanged.
  CHECK(::prctl(PR_GET_DUMPABLE) == 1);
}

TEST_CASE("ProtectDaemonProcess: a refused setting is an Internal error that names it",
          "[process][fork]") {
  CHECK(InForkedChild([] {
          if (!RefusePrctl(PR_SET_DUMPABLE)) return std::string("no seccomp filter");
          return Describe(ProtectDaemonProcess());
        }) == "internal: cannot make the process non-dumpable: Operation not permitted");
  CHECK(InForkedChild([] {
          if (!RefusePrctl(PR_SET_CHILD_SUBREAPER)) return std::string("no seccomp filter");
          std::string seen = Describe(ProtectDaemonProcess());
          // The first setting was made before the second was refused.
          return seen + ", dumpable " + std::to_string(::prctl(PR_GET_DUMPABLE));
        }) ==
        "internal: cannot make the process a child subreaper: Operation not permitted, "
        "dumpable 0");
}
