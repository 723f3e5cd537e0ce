#include "launch/parent_watch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/errno_error.h"
#include "launch/launch_errors.h"

namespace dmlp {

Status StopWithParent(pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
    return ErrnoError(kInternal, "PR_SET_PDEATHSIG");
  const pid_t current = getppid();
  if (current != parent)
    return Status::Error(kParentGone, "--stop-with-parent " + std::to_string(parent) +
                                          " is not dmlp-launch's parent (that is pid " +
                                          std::to_string(current) +
                                          "); it died before the job started, or the pid is wrong");
  return Status::Ok();
}

bool IsParentDeath(int signal, pid_t sender, pid_t parent) {
  // The kernel sends the parent-death signal in the name of the dying parent,
  // and by then we have been reparented.
  return parent != 0 && signal == SIGTERM && sender == parent && getppid() != parent;
}

}  // namespace dmlp
