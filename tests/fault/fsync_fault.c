/* fsync_fault: an LD_PRELOAD library that makes fsync() and fdatasync() fail with EIO for one
 * file, switched on and off while the process runs, so the storage-fault test
 * (tests/integration/storage_fault_test.cc) can show what the real daemon does when its disk
 * refuses a sync: SQLite's WAL at a commit, the database file at a checkpoint.
 *
 * HOOKBOX_FSYNC_FAULT_CONTROL names a control file. While it exists, a sync of a descriptor
 * whose path (its /proc/self/fd link) equals the control file's first line fails with EIO
 * without syncing; every other sync, and every sync while the file is absent, is the real
 * one. Each failure it makes appends "<call> <path>" to the control file's name plus ".hits",
 * so the test knows the fault was met and not merely armed.
 *
 * Plain C with no sanitizer of its own (CMakeLists.txt): under ASan or TSan the test puts the
 * sanitizer's runtime first in LD_PRELOAD, whose interceptor then reaches these functions as
 * "the next" fsync. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*sync_fn)(int);

/* Whether the sync of `fd` is to fail; on yes, records the hit. Keeps errno as it was. */
static int should_fail(int fd, const char *call) {
  const char *control = getenv("HOOKBOX_FSYNC_FAULT_CONTROL");
  if (control == NULL || control[0] == '\0') return 0;
  const int saved = errno;
  int fail = 0;
  char target[PATH_MAX] = "";
  int cfd = open(control, O_RDONLY | O_CLOEXEC);
  if (cfd >= 0) {
    ssize_t n = read(cfd, target, sizeof target - 1);
    close(cfd);
    target[n > 0 ? n : 0] = '\0';
    target[strcspn(target, "\n")] = '\0';
    char link[64];
    char path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, path, sizeof path - 1);
    if (len > 0 && target[0] != '\0') {
      path[len] = '\0';
      fail = strcmp(path, target) == 0;
    }
    if (fail) {
      char hits[PATH_MAX + 8];
      snprintf(hits, sizeof hits, "%s.hits", control);
      int hfd = open(hits, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (hfd >= 0) {
        char line[PATH_MAX + 32];
        int m = snprintf(line, sizeof line, "%s %s\n", call, path);
        if (m > 0) (void)!write(hfd, line, (size_t)m);
        close(hfd);
      }
    }
  }
  errno = saved;
  return fail;
}

static int real_sync(const char *name, int fd) {
  sync_fn real = (sync_fn)dlsym(RTLD_NEXT, name);
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  return real(fd);
}

int fsync(int fd) {
  if (should_fail(fd, "fsync")) {
    errno = EIO;
    return -1;
  }
  return real_sync("fsync", fd);
}

int fdatasync(int fd) {
  if (should_fail(fd, "fdatasync")) {
    errno = EIO;
    return -1;
  }
  return real_sync("fdatasync", fd);
}
