#include "launch/group_watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/errno_error.h"
#include "launch/launch_errors.h"

namespace dmlp {
namespace {

constexpr char kDismissed = 'd';

// REQUIRES: runs in the forked child; system calls only.
[[noreturn]] void Watch(int watch_fd, const std::vector<pid_t>& groups,
                        const std::vector<int>& inherited_fds) {
  // Its own group: a kill of the launcher's whole process group must not take
  // the watchdog with it. Every catchable signal blocked: only SIGKILL ends it early.
  setpgid(0, 0);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  prctl(PR_SET_NAME, "dmlp-launch-wd");
  for (int fd : inherited_fds) close(fd);
  int dev_null = open("/dev/null", O_RDWR);
  if (dev_null >= 0) {
    for (int target = 0; target <= 2; ++target) dup2(dev_null, target);
    if (dev_null > 2) close(dev_null);
  }
  char byte = 0;
  ssize_t got;
  do {
    got = read(watch_fd, &byte, 1);
  } while (got < 0 && errno == EINTR);
  if (got == 1 && byte == kDismissed) _exit(0);
  // EOF: the launcher died without dismissing us.
  for (pid_t group : groups) {
    if (group > 1) kill(-group, SIGKILL);
  }
  _exit(0);
}

}  // namespace

Result<GroupWatchdog> GroupWatchdog::Start(const std::vector<pid_t>& groups,
                                           const std::vector<int>& inherited_fds) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0)
    return ErrnoError(kSpawnFailed, "watchdog pipe2");
  UniqueFd watch_end(ends[0]), launcher_end(ends[1]);
  pid_t pid = fork();
  if (pid < 0)
    return ErrnoError(kSpawnFailed, "watchdog fork");
  if (pid == 0) {
    close(launcher_end.Release());  // the launcher must be the only writer, or EOF never comes
    Watch(watch_end.get(), groups, inherited_fds);
  }
  setpgid(pid, pid);
  GroupWatchdog watchdog;
  watchdog.pid_ = pid;
  watchdog.launcher_end_ = std::move(launcher_end);
  return watchdog;
}

void GroupWatchdog::Dismiss() {
  if (!launcher_end_.valid()) return;
  ssize_t wrote = write(launcher_end_.get(), &kDismissed, 1);
  (void)wrote;  // a watchdog that is already gone needs no dismissal
  launcher_end_.Reset();
  // It exits as soon as it reads the byte; reap it so a process that runs
  // several jobs does not collect zombies. Bounded: never wait on it for long.
  for (int attempt = 0; attempt < 200; ++attempt) {
    int status = 0;
    pid_t reaped = waitpid(pid_, &status, WNOHANG);
    if (reaped != 0) break;  // reaped, or already reaped by the supervisor (ECHILD)
    usleep(1000);
  }
}

}  // namespace dmlp
