// defines: LastResort, SetLastResort, EndRankAfterLoss
//
// The end of a rank that a lost peer could not stop. A loss ends every wait
// of the rank through PeerLoss's hooks (peer_monitor.h), and the rank then
// reports the loss and leaves through its normal path. A wait inside a
// library can outlive the hooks (Gloo, on a rank frozen while its peers'
// connections closed, waited for ever once continued: tests/e2e/cluster,
// fault_freeze); a lost job must never hang (it may hold OUT_DIR's lock). So
// a heartbeat after the loss the monitor ends the rank itself, and it ends it
// as the normal path would: the trainer's own report of the loss (the lost
// rank's host named once the ranks' hosts are known) and its exit code for
// it (PEER_LOST: 1), not a message and a code of its own.
// Process-wide, as there is one rank per process.
#pragma once

#include <chrono>
#include <functional>

#include "common/status.h"

namespace dmlp {

/// Reports `loss` as the rank's error path would and returns the exit code.
using LastResort = std::function<int(const Status& loss)>;

/// Replaces the process's last resort (thread-safe). Without one,
/// EndRankAfterLoss prints "dmlp-train: error: <loss>" and exits 1.
void SetLastResort(LastResort last_resort);

/// Says that rank `rank` still waited `waited` after the loss, runs the last
/// resort on `loss`, and ends the process with its code (_exit: the stuck
/// thread cannot be unwound).
[[noreturn]] void EndRankAfterLoss(const Status& loss, int rank, std::chrono::milliseconds waited);

}  // namespace dmlp
