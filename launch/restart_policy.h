// defines: RestartDecision, DecideRestart, RestartNotice
//
// --restarts: whether a finished attempt is followed by another, and what the
// launcher says when it is. A restart follows only a rank's failure (first
// non-zero exit or signal), never a signal to the launcher (the user asked to
// stop) nor a teardown that left a process alive (the next attempt must not
// start beside an orphan of this one). A failure with exit code 4 or 5 (a rank
// diverged, a shard audit failed: see divergence_line.h) is restarted only
// when asked (--restart-on-divergence): the restart resumes from the last
// checkpoint and replays the same steps on the same devices, so it mostly
// fails again the same way, and costs the time of those steps to learn it. The launcher's own errors (command not
// found, configuration) never reach this point: they end the launch as errors.
// Pure functions, so the rules are tested without starting processes.
#pragma once

#include <sys/types.h>

#include <string>

#include "launch/run_summary.h"

namespace dmlp {

struct RestartDecision {
  bool restart = false;
  // When restart is false after a failed attempt and restarts were allowed:
  // why, for the summary ("no restarts left (--restarts 2)"). Empty otherwise.
  std::string not_restarted;
};

/// Decides about attempt `number` (1-based) of `max_attempts` (--restarts + 1).
/// `stop_signal`: the first SIGINT/SIGTERM/SIGHUP/SIGQUIT the launcher received
/// so far (0: none), from `stop_sender` (0: unknown). `restart_on_divergence`:
/// --restart-on-divergence was given.
RestartDecision DecideRestart(const JobReport& attempt, int number, int max_attempts,
                              int stop_signal, pid_t stop_sender, bool restart_on_divergence);

/// Why a divergence was not restarted: "rank 1 diverged at step 7
/// (RANK_DIVERGED); a restart replays the same steps — pass
/// --restart-on-divergence to retry".
std::string DivergenceNotRestarted(const Divergence& divergence);

/// "attempt 2 of 3: restarting all 4 ranks with RESUME=1 after rank 1 failed (exited with code 3)".
std::string RestartNotice(const JobReport& failed_attempt, int next_number, int max_attempts);

}  // namespace dmlp
