// defines: StopWithParent, IsParentDeath
//
// --stop-with-parent PID: a wrapper that starts dmlp-launch (run.sh does, in
// a session of its own so that a terminal's Ctrl-C reaches the launcher only
// through the wrapper) may die by SIGKILL, which it cannot pass on. Without
// this the launcher and its ranks would run on unobserved, holding
// dmlp.lock, and the run would never be verified. The kernel's parent-death
// signal (PR_SET_PDEATHSIG) is set to SIGTERM, so the launcher ends the job
// exactly as on a SIGTERM from a user: ranks stop at a step boundary, their
// receipts stay valid, and RESUME=1 continues the run.
//
// The parent may die before the signal is armed; then nothing would ever
// arrive. The wrapper's pid, given on the command line rather than read with
// getppid() at start, closes that race: once armed, a getppid() that no
// longer names it means the parent is already gone.
#pragma once

#include <sys/types.h>

#include "common/status.h"

namespace dmlp {

/// Arms SIGTERM as the parent-death signal. PARENT_GONE when `parent` is not
/// (or no longer) dmlp-launch's parent. REQUIRES: SIGTERM is blocked and read
/// from the supervisor's signalfd, so an early death is a pending SIGTERM.
Status StopWithParent(pid_t parent);

/// Whether a SIGTERM from `sender` is the parent-death signal of `parent`.
bool IsParentDeath(int signal, pid_t sender, pid_t parent);

}  // namespace dmlp
