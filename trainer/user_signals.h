// defines: BlockUserSignals, ReportUserSignals
//
// SIGUSR1 and SIGUSR2 never end a rank. dmlp-launch passes them on to every
// rank, and batch systems send them as warnings (Slurm's `--signal=USR1@120`
// before the time limit, `scancel --signal=USR1`); their default action would
// kill a healthy job. They are blocked from the first line of main, before any
// thread exists, so every thread inherits the mask and no system call of the
// collectives or the rendezvous is interrupted by them (EINTR). The step loop
// collects them between steps, without waiting, and says so on stderr:
//   dmlp-train: SIGUSR1 received from pid 812; ignored, the job goes on
// They have no other effect. (A "checkpoint now" would need every rank to agree
// on the step; CHECKPOINT_EVERY is the way to have checkpoints.)
#pragma once

#include <cstdio>

namespace dmlp {

/// Blocks SIGUSR1 and SIGUSR2 in the calling thread and all it starts.
/// REQUIRES: called before any other thread starts.
void BlockUserSignals();
/// Takes every pending SIGUSR1/SIGUSR2, without waiting, and logs each on `stream`.
void ReportUserSignals(std::FILE* stream);

}  // namespace dmlp
