// defines: GroupWatchdog
//
// Covers the one case the parent-death signal cannot: dmlp-launch killed with
// SIGKILL while ranks have children of their own. PR_SET_PDEATHSIG kills each
// rank, but a rank's children (data loaders, a shell's background jobs) carry
// no such signal and would live on, holding the GPU. The watchdog is a small
// forked process in its own process group that blocks on a pipe whose only
// writer is the launcher: EOF means the launcher died, and it SIGKILLs every
// rank's process group. A launcher that finishes normally dismisses it first
// (one byte), so it never signals a group id that might have been reused.
#pragma once

#include <sys/types.h>

#include <vector>

#include "common/status.h"
#include "launch/unique_fd.h"

namespace dmlp {

class GroupWatchdog {
 public:
  GroupWatchdog() = default;
  /// Forks the watchdog for `groups`; it closes `inherited_fds` (the
  /// launcher's pipes and event descriptors) and points 0..2 at /dev/null.
  static Result<GroupWatchdog> Start(const std::vector<pid_t>& groups,
                                     const std::vector<int>& inherited_fds);
  /// Tells the watchdog the groups are gone; it exits without signalling.
  void Dismiss();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = 0;
  UniqueFd launcher_end_;
};

}  // namespace dmlp
