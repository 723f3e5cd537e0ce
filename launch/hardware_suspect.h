// defines: HardwareSuspectLines
//
// --restarts with --restart-on-divergence: what the divergences of all
// attempts say together. A restart resumes from the last checkpoint and
// replays the same steps with the same data on the same devices, so a
// computation that is deterministic gives the same bits again: a rank that
// diverges again at the same step is not bad luck but a device (or host) that
// computes wrongly, and the summary names it. A divergence at another step or
// by another rank is not a repeat, and is said to be none. Pure, so the rules
// are tested without starting processes.
#pragma once

#include <string>
#include <vector>

#include "launch/run_summary.h"

namespace dmlp {

/// For every place (step and rank(s)) where two or more attempts diverged:
/// "hardware suspect: rank 1 diverged at step 7 in attempts 1 and 2, on host
/// h1 (NVIDIA L4 ...)" (devices as the latest of them printed). For every
/// attempt that diverged elsewhere than the last earlier one that diverged,
/// and repeats no other: "attempt 2: rank 1 diverged at step 9
/// (RANK_DIVERGED), not as in attempt 1 (rank 1 diverged at step 7): not a
/// hardware suspect" (or "cannot tell whether it repeats" when either line
/// lacked the step or the ranks). Empty when fewer than two attempts diverged.
std::vector<std::string> HardwareSuspectLines(const std::vector<JobReport>& attempts);

}  // namespace dmlp
