// Starting a child process cheaply, with the guarantees the `exec` handler needs.
//
// Spawn() starts `program` in a new session (setsid), so in a new process group, both led
// by the child, with PR_SET_PDEATHSIG SIGKILL (the child dies with the thread that started
// it: see below), stdin from `stdin_fd`, stdout and stderr both to `output_fd`, no other
// descriptor open, every signal at its default disposition, an empty signal mask, exactly
// the environment `envp`, in the directory `workdir`, and as a child subreaper
// (PR_SET_CHILD_SUBREAPER, which execve keeps): whatever the program starts and then loses
// track of (a double fork, a daemon that detached with setsid) is reparented to the program
// while it runs, not to init, so that its whole tree is still below it, and then below the
// daemon (children.h). Nothing is interpreted: argv goes to execve as given, and no shell
// is involved.
//
// Why a session and not just a group: a session leader cannot change its process group,
// and setpgid into a group of another session fails (EPERM), so neither the child nor
// anything it starts can move into the daemon's group, where a kill of the child's group
// would miss it (children.h). The session also has no controlling terminal.
//
// Why not fork: fork copies the daemon's page tables, whose cost grows with its RSS, to a
// child that throws them away at once in execve. Why not posix_spawn, which avoids that
// copy: it cannot set PR_SET_PDEATHSIG in the child, and without it a child outlives a
// daemon killed with -9 and overlaps the attempt the restarted daemon makes at once. So
// Spawn does what glibc's posix_spawn does underneath, clone(CLONE_VM | CLONE_VFORK) on a
// stack of its own (the child shares the daemon's memory until execve and the calling
// thread waits until then), with the steps of the old fork path in the child.
//
// The thread matters: Linux sends the parent-death signal when the *thread* that created
// the child exits, not the process. Call Spawn from a thread that outlives its children
// (in the daemon: the dispatcher's thread, and the listener's threads for sync requests,
// both living as long as the process), never from a short-lived one.
//
// Spawn is safe to call from any thread of a multi-threaded process and allocates nothing
// in the child. It returns once the child runs the program (pid > 0, error 0) or has
// failed to (pid -1, error = errno of what failed: the stack mmap, clone, or a step in the
// child such as dup2 or execve; that child is reaped before Spawn returns). EMFILE, ENFILE
// and EAGAIN come back unchanged, so the caller can tell a daemon out of resources from a
// bad program. The caller reaps a started child (waitpid) as with fork.
#pragma once

#include <sys/types.h>

namespace hookbox {

struct SpawnRequest {
  const char* program;            // absolute path
  char* const* argv;              // null-terminated
  char* const* envp;              // null-terminated
  int stdin_fd;                   // becomes the child's 0
  int output_fd;                  // becomes the child's 1 and 2
  const char* workdir = nullptr;  // the child's working directory; nullptr: the caller's
};

struct Spawned {
  pid_t pid = -1;  // > 0 when the child is running the program
  int error = 0;   // errno of what failed (clone, or execve in the child); 0 on success
};

Spawned Spawn(const SpawnRequest& request);

}  // namespace hookbox
