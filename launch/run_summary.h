// defines: RankEnding, RankReport, JobCause, JobReport, LaunchReport, SummaryLines, AttemptLines
//
// What happened to a job, as data (the supervisor fills it) and as the lines
// shown at the end: which rank failed first and how, and how every other rank
// ended. A JobReport is one attempt (one start of every rank); a LaunchReport
// is all attempts of a launch (--restarts). Kept apart from the supervisor so
// the wording is tested without starting processes.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "launch/divergence_line.h"
#include "launch/exit_status.h"

namespace dmlp {

/// How a rank came to end, relative to what the launcher did to it.
enum class RankEnding {
  kRunning,          // not ended yet (only while the job runs)
  kOnItsOwn,         // before the launcher signalled it
  kAfterStopSignal,  // after SIGTERM (or a forwarded signal), within the grace period
  kAfterKill,        // after SIGKILL (grace over, a second signal, or --grace 0)
  kNotReaped,        // still there after SIGKILL and the bounded wait
};

struct RankReport {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = 0;
  ExitStatus status;  // meaningful once ending is neither kRunning nor kNotReaped
  RankEnding ending = RankEnding::kRunning;
  double end_seconds = 0;  // since the launch started (monotonic clock)
  int stop_signal = 0;     // the first signal the launcher sent it (SIGTERM, a forwarded SIGINT)
  char stuck_state = 0;    // /proc state of a rank that was not reaped
};

enum class JobCause {
  kAllSucceeded,    // every rank exited with code 0
  kRankFailed,      // a rank exited non-zero or by a signal first
  kLauncherSignal,  // the launcher was told to stop (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
};

struct JobReport {
  JobCause cause = JobCause::kAllSucceeded;
  int failed_index = -1;        // index into ranks of the first failure
  int launcher_signal = 0;      // for kLauncherSignal
  pid_t signal_sender = 0;      // its sender, 0 when unknown
  bool killed_at_once = false;  // a second signal asked for SIGKILL without grace
  double grace_seconds = 0;
  double elapsed_seconds = 0;
  int world_size = 0;
  std::vector<RankReport> ranks;   // this node's ranks, by local rank
  std::vector<std::string> notes;  // leftovers, stuck processes, outputs left open
  // Set when the first failure exited with code 4 or 5 (the hardware may be at
  // fault): what its RANK_DIVERGED / SHARD_AUDIT_FAILED line said.
  std::optional<Divergence> divergence;

  /// 0, the failed rank's code or 128+signal, or 128+the launcher's signal.
  int ExitCode() const;
};

/// Every attempt of one launch, in order; more than one only with --restarts.
struct LaunchReport {
  std::vector<JobReport> attempts;  // never empty once RunJob returns
  int max_attempts = 1;             // --restarts + 1
  double elapsed_seconds = 0;       // from the first start to the end of the last attempt
  // Why the last attempt, a failure, was not followed by another one ("no
  // restarts left (--restarts 2)", "dmlp-launch received SIGTERM"); empty when
  // it succeeded, was stopped by a launcher signal, or --restarts is 0.
  std::string not_restarted;

  /// The last attempt's exit code.
  int ExitCode() const { return attempts.back().ExitCode(); }
};

/// The end-of-job lines (without the "dmlp-launch: " prefix). A divergence
/// adds "  rank 1 diverged at step 7 (RANK_DIVERGED), on host h1 (...)" under
/// the attempt's first line, and with several attempts, HardwareSuspectLines.
std::vector<std::string> SummaryLines(const JobReport& report);
/// The end-of-launch lines: with one attempt, SummaryLines(attempt) (plus why
/// it was not restarted); with several, one line per attempt, then the last
/// attempt's details and the exit code.
std::vector<std::string> SummaryLines(const LaunchReport& report);
/// One finished attempt as shown when it is restarted: "attempt 1 of 3
/// (0.8 s): rank 1 failed first: ...", then how the other ranks ended.
std::vector<std::string> AttemptLines(const JobReport& attempt, int number, int max_attempts);
/// "1.5 s": seconds with at most three decimals (milliseconds), for messages.
std::string FormatSeconds(double seconds);

}  // namespace dmlp
