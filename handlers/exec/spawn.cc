// Spawn(): clone(CLONE_VM | CLONE_VFORK) on a stack of its own, then in the child a new
// session (setsid), PR_SET_PDEATHSIG, the three standard descriptors, nothing else open,
// default signals, an empty mask, then the working directory and PR_SET_CHILD_SUBREAPER,
// then execve.
// spawn.h says why this and not fork or posix_spawn.
//
// The child shares the daemon's memory until execve. So, in the child: raw system calls
// only (through syscall(2), which touches nothing but the calling thread's errno, and the
// parent thread is suspended), no allocation, no lock, nothing of the parent's heap written
// but the one `error` field the parent reads afterwards; and no signal handler of the
// daemon may run there, hence every signal is blocked across the clone (the child inherits
// that mask) and only unblocked in the child once every disposition is SIG_DFL. The child's
// function is also kept out of the sanitizers' instrumentation: ASan would poison redzones
// in the shadow of a stack that is never unwound, and TSan would push a frame on the
// parent thread's shadow stack that is never popped.
#include "handlers/exec/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace hookbox {
namespace {

#if defined(__clang__)
#define HOOKBOX_CHILD_CODE __attribute__((noinline, disable_sanitizer_instrumentation))
#else
#define HOOKBOX_CHILD_CODE __attribute__((noinline, no_sanitize("address", "thread", "undefined")))
#endif

// glibc's clone(3) by its strong name: ThreadSanitizer interposes `clone` and, taking every
// clone for a fork, resets its runtime's state in the child, which with CLONE_VM is the
// parent's own (the next thread the daemon starts then dies: "starting new threads after
// multi-threaded fork"). The child here runs no instrumented code, so TSan need not know.
#if defined(__GLIBC__)
extern "C" int __clone(int (*fn)(void*), void* stack, int flags, void* arg, ...);
#define HOOKBOX_CLONE __clone
#else
#define HOOKBOX_CLONE clone
#endif

#if defined(__hppa__)
#error "the child stack below assumes a stack that grows down"
#endif

// The child needs a few hundred bytes (one struct, syscall(2)'s frame); the rest is margin.
// Below it one PROT_NONE page, so that an overflow faults instead of writing into whatever
// the daemon has mapped there.
constexpr size_t kChildStack = 32 * 1024;

// The kernel's own struct sigaction for rt_sigaction(2), not glibc's (whose mask is 128
// bytes): this layout is the generic one (x86, arm, arm64, riscv, …).
#if defined(__mips__) || defined(__alpha__) || defined(__sparc__) || defined(__ia64__)
#error "KernelSigaction below does not have this architecture's layout"
#endif
struct KernelSigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  uint64_t mask;
};
constexpr unsigned long kKernelSigsetBytes = sizeof(uint64_t);
constexpr int kKernelSignals = 64;

// Shared between the parent thread and the child (CLONE_VM): the parent reads `error` once
// clone has returned, which (CLONE_VFORK) is after the child's execve or exit.
struct ChildArgs {
  const SpawnRequest* request;
  pid_t parent;
  int error;  // set by a child that does not reach the program
};

HOOKBOX_CHILD_CODE int ChildMain(void* opaque) {
  ChildArgs* args = static_cast<ChildArgs*>(opaque);
  const SpawnRequest& request = *args->request;
  int in = request.stdin_fd;
  int out = request.output_fd;

  // A new session and group, led by the child (spawn.h): it cannot leave the group, and
  // nothing it starts can join a group outside the session, the daemon's included.
  if (syscall(SYS_setsid) < 0) goto failed;
  if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) goto failed;
  // The parent died before the prctl took effect: its signal will never come.
  if (static_cast<pid_t>(syscall(SYS_getppid)) != args->parent) {
    errno = ESRCH;
    goto failed;
  }

  // stdin and output first out of 0..2 (a plain copy, close-on-exec off), so that putting
  // one in place cannot overwrite the other and dup3 always has two different numbers
  // (dup2 onto the same number keeps FD_CLOEXEC). The copies are closed with the rest.
  if (in < 3 && (in = static_cast<int>(syscall(SYS_fcntl, in, F_DUPFD, 3))) < 0) goto failed;
  if (out < 3 && (out = static_cast<int>(syscall(SYS_fcntl, out, F_DUPFD, 3))) < 0) {
    goto failed;
  }
  if (syscall(SYS_dup3, in, 0, 0) < 0) goto failed;
  if (syscall(SYS_dup3, out, 1, 0) < 0) goto failed;
  if (syscall(SYS_dup3, out, 2, 0) < 0) goto failed;
  // Whatever the daemon has open (listening sockets, the database) stays out of the child,
  // close-on-exec or not. A kernel without close_range (< 5.9) leaves the close-on-exec
  // descriptors to execve.
  syscall(SYS_close_range, 3U, ~0U, 0U);

  {
    // The daemon's handlers, ignored signals (SIGPIPE) and blocked ones are its own.
    // SIGKILL and SIGSTOP cannot be changed (EINVAL, ignored).
    KernelSigaction dfl{};
    dfl.handler = SIG_DFL;
    for (int sig = 1; sig <= kKernelSignals; ++sig) {
      if (sig == SIGKILL || sig == SIGSTOP) continue;
      syscall(SYS_rt_sigaction, sig, &dfl, nullptr, kKernelSigsetBytes);
    }
    uint64_t none = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, kKernelSigsetBytes);
  }

  if (request.workdir != nullptr && syscall(SYS_chdir, request.workdir) != 0) goto failed;
  // Orphans of the program's descendants come back to it, not to init (spawn.h).
  if (syscall(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) goto failed;

  syscall(SYS_execve, request.program, request.argv, request.envp);

failed:
  args->error = errno != 0 ? errno : EINVAL;
  syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

}  // namespace

Spawned Spawn(const SpawnRequest& request) {
  Spawned result;
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped = page + kChildStack;
  void* stack = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (stack == MAP_FAILED) {
    result.error = errno;
    return result;
  }
  if (mprotect(stack, page, PROT_NONE) != 0) {
    result.error = errno;
    munmap(stack, mapped);
    return result;
  }

  ChildArgs args{&request, getpid(), 0};
  // Every signal blocked in this thread across the clone: none may run a handler on the
  // child's stack in the shared memory before the child has reset the dispositions. The raw
  // call because pthread_sigmask leaves glibc's own two signals (cancellation, setxid)
  // unblocked; the kernel ignores SIGKILL and SIGSTOP in the set.
  const uint64_t all = ~uint64_t{0};
  uint64_t saved = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &saved, kKernelSigsetBytes);
  const pid_t pid = HOOKBOX_CLONE(ChildMain, static_cast<char*>(stack) + mapped,
                                  CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  const int clone_error = errno;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, nullptr, kKernelSigsetBytes);
  // The child has called execve (its own memory now) or exited: the stack is free.
  munmap(stack, mapped);

  if (pid < 0) {
    result.error = clone_error;
    return result;
  }
  if (args.error != 0) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.error = args.error;
    return result;
  }
  result.pid = pid;
  return result;
}

}  // namespace hookbox
