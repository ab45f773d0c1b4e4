// How much starting a child costs a process as large as the daemon: /bin/true started and
// reaped N times, one at a time, by
//   fork     fork + execve with the old exec handler's steps in the child (new group,
//            PR_SET_PDEATHSIG, dup2 of 0-2, close_range, every signal to SIG_DFL, empty
//            mask) and its pipe for execve's errno, read by the parent;
//   posix_spawn  glibc's, with the same attributes where it has them (SETPGROUP, SETSIGDEF
//            of every signal, SETSIGMASK empty, three dup2 and closefrom(3)); it cannot
//            set PR_SET_PDEATHSIG;
//   Spawn    hookbox::Spawn (handlers/exec/spawn.cc: clone(CLONE_VM | CLONE_VFORK)).
// with the process's RSS grown first to about 20 MB and then to about 200 MB: anonymous
// memory, every page written, huge pages refused (MADV_NOHUGEPAGE), so that the page
// tables are those of a heap of that size. Single-threaded; each method runs `rounds` times
// in turn and the median round is shown: wall-clock µs per start (start to reaped), starts/s,
// and the CPU time per start of this process and its children (user + system, getrusage),
// which a busy machine distorts less than the wall clock.
//
//   spawn [N=2000] [ROUNDS=3] [SIZES_MB=20,200]
#include "handlers/exec/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

char kTrue[] = "/bin/true";
char* kArgv[] = {kTrue, nullptr};
char kPath[] = "PATH=/usr/bin:/bin";
char* kEnvp[] = {kPath, nullptr};

int null_in = -1, null_out = -1;

void Die(const char* what) {
  std::fprintf(stderr, "spawn bench: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

void Reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) Die("waitpid");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "spawn bench: /bin/true did not exit 0\n");
    std::exit(1);
  }
}

// The exec handler's path before Spawn (handlers/exec/exec.cc at 170278c), minus its
// stdin/output pipes, which every method would need alike.
void StartFork() {
  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) Die("pipe2");
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) Die("fork");
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(null_in, 0);
    dup2(null_out, 1);
    dup2(null_out, 2);
    int err_fd = fcntl(err[1], F_DUPFD_CLOEXEC, 3);
    if (err_fd < 0) err_fd = err[1];
    close_range(3, err_fd - 1, 0);
    close_range(err_fd + 1, ~0U, 0);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(kTrue, kArgv, kEnvp);
    const int e = errno;
    (void)!write(err_fd, &e, sizeof e);
    _exit(127);
  }
  close(err[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(err[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  close(err[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    errno = exec_errno;
    Die("execve");
  }
  Reap(pid);
}

void StartPosixSpawn() {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_init(&actions);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawn_file_actions_adddup2(&actions, null_in, 0);
  posix_spawn_file_actions_adddup2(&actions, null_out, 1);
  posix_spawn_file_actions_adddup2(&actions, null_out, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, kTrue, &actions, &attr, kArgv, kEnvp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (error != 0) {
    errno = error;
    Die("posix_spawn");
  }
  Reap(pid);
}

void StartSpawn() {
  hookbox::Spawned child = hookbox::Spawn({kTrue, kArgv, kEnvp, null_in, null_out});
  if (child.pid <= 0) {
    errno = child.error;
    Die("Spawn");
  }
  Reap(child.pid);
}

long RssKb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (f == nullptr || std::fscanf(f, "%ld %ld", &size, &resident) != 2) Die("statm");
  std::fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Grows the RSS to about `mb` MB with written, small-page anonymous memory (kept mapped).
void GrowTo(long mb) {
  const long missing_kb = mb * 1024 - RssKb();
  if (missing_kb <= 0) return;
  const size_t bytes = static_cast<size_t>(missing_kb) * 1024;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) Die("mmap");
  madvise(p, bytes, MADV_NOHUGEPAGE);
  std::memset(p, 0x5a, bytes);
}

struct Method {
  const char* name;
  void (*start)();
  std::vector<double> us_per_start;   // wall clock, one per round
  std::vector<double> cpu_per_start;  // user + system of this process and its reaped children
};

double CpuUs() {
  double us = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    us += (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
  }
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  std::vector<long> sizes;
  {
    std::string list = argc > 3 ? argv[3] : "20,200";
    for (size_t at = 0; at < list.size();) {
      size_t comma = list.find(',', at);
      if (comma == std::string::npos) comma = list.size();
      sizes.push_back(std::atol(list.substr(at, comma - at).c_str()));
      at = comma + 1;
    }
  }
  null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  null_out = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null_in < 0 || null_out < 0) Die("open /dev/null");

  std::printf("%d starts of /bin/true per method and round, %d rounds, median round shown\n\n", n,
              rounds);
  std::printf(
      "| RSS | method | µs per start | starts/s | CPU µs per start |\n"
      "|---:|---|---:|---:|---:|\n");
  for (long mb : sizes) {
    GrowTo(mb);
    const long rss_mb = RssKb() / 1024;
    std::vector<Method> methods = {{"fork + execve", StartFork, {}},
                                   {"posix_spawn", StartPosixSpawn, {}},
                                   {"hookbox Spawn (clone VM+VFORK)", StartSpawn, {}}};
    for (Method& m : methods) {
      for (int i = 0; i < 50; ++i) m.start();  // warm-up
    }
    for (int r = 0; r < rounds; ++r) {
      for (Method& m : methods) {
        const double cpu0 = CpuUs();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) m.start();
        const std::chrono::duration<double, std::micro> took =
            std::chrono::steady_clock::now() - t0;
        m.us_per_start.push_back(took.count() / n);
        m.cpu_per_start.push_back((CpuUs() - cpu0) / n);
      }
    }
    for (Method& m : methods) {
      std::sort(m.us_per_start.begin(), m.us_per_start.end());
      std::sort(m.cpu_per_start.begin(), m.cpu_per_start.end());
      const double us = m.us_per_start[m.us_per_start.size() / 2];
      const double cpu = m.cpu_per_start[m.cpu_per_start.size() / 2];
      std::printf("| %ld MB | %s | %.1f | %.0f | %.1f |\n", rss_mb, m.name, us, 1e6 / us, cpu);
    }
    std::fflush(stdout);
  }
  return 0;
}
