#include "launch/restart_policy.h"

#include <algorithm>

namespace dmlp {

RestartDecision DecideRestart(const JobReport& attempt, int number, int max_attempts,
                              int stop_signal, pid_t stop_sender, bool restart_on_divergence) {
  RestartDecision decision;
  // Success, and a launch without --restarts, need no word: the summary reads as it always has.
  if (attempt.cause == JobCause::kAllSucceeded || max_attempts <= 1) return decision;
  // "stopped by SIGTERM" already heads the summary.
  if (attempt.cause == JobCause::kLauncherSignal) return decision;
  if (stop_signal != 0) {
    // Sent while the failed attempt was being torn down (or just after): the user wants out.
    std::string from = stop_sender > 0 ? " from pid " + std::to_string(stop_sender) : "";
    decision.not_restarted = "dmlp-launch received " + SignalName(stop_signal) + from;
    return decision;
  }
  bool stuck = std::any_of(attempt.ranks.begin(), attempt.ranks.end(),
                           [](const RankReport& r) { return r.ending == RankEnding::kNotReaped; });
  if (stuck) {
    decision.not_restarted = "a rank of attempt " + std::to_string(number) +
                             " is still alive after SIGKILL; new ranks must not start beside it";
    return decision;
  }
  if (number >= max_attempts) {
    decision.not_restarted =
        "no restarts left (--restarts " + std::to_string(max_attempts - 1) + ")";
    return decision;
  }
  // After "no restarts left": with none left the flag would not help, so it is not suggested.
  if (attempt.divergence && !restart_on_divergence) {
    decision.not_restarted = DivergenceNotRestarted(*attempt.divergence);
    return decision;
  }
  decision.restart = true;
  return decision;
}

std::string DivergenceNotRestarted(const Divergence& divergence) {
  return DescribeDivergence(divergence) +
         "; a restart replays the same steps — pass --restart-on-divergence to retry";
}

std::string RestartNotice(const JobReport& failed_attempt, int next_number, int max_attempts) {
  const RankReport& failed =
      failed_attempt.ranks.at(static_cast<size_t>(failed_attempt.failed_index));
  std::string ranks = std::to_string(failed_attempt.ranks.size()) + " ranks";
  ranks = static_cast<int>(failed_attempt.ranks.size()) == failed_attempt.world_size
              ? "all " + ranks
              : "this node's " + ranks;
  return "attempt " + std::to_string(next_number) + " of " + std::to_string(max_attempts) +
         ": restarting " + ranks + " with RESUME=1 after rank " + std::to_string(failed.rank) +
         " failed (" + failed.status.ToString() + ")";
}

}  // namespace dmlp
