// defines: RestartDecision, DecideRestart, RestartNotice
//
// --restarts: whether a finished attempt is followed by another, and what the
// launcher says when it is. A restart follows only a rank's failure (first
// non-zero exit or signal), never a signal to the launcher (the user asked to
// stop) nor a teardown that left a process alive (the next attempt must not
// start beside an orphan of this one). The launcher's own errors (command not
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
/// so far (0: none), from `stop_sender` (0: unknown).
RestartDecision DecideRestart(const JobReport& attempt, int number, int max_attempts,
                              int stop_signal, pid_t stop_sender);

/// "attempt 2 of 3: restarting all 4 ranks with RESUME=1 after rank 1 failed (exited with code 3)".
std::string RestartNotice(const JobReport& failed_attempt, int next_number, int max_attempts);

}  // namespace dmlp
