// defines: Supervisor, RunJob
//
// The rank supervisor: starts this node's ranks and runs one event loop until
// all of them, and everything left in their process groups, are gone.
//
// The loop waits in epoll on a signalfd (SIGCHLD, the launcher's own signals)
// and on every rank's stdout/stderr pipe. A SIGCHLD is answered by reaping
// with waitpid(WNOHANG) until nothing is left, stamped with CLOCK_MONOTONIC,
// so the first failure is known exactly when it happens; of the ranks reaped
// together, the one the SIGCHLD record names died first and is handled first. The only timer is the
// teardown deadline (--grace, then a bounded wait after SIGKILL, then a
// bounded drain of the pipes); while no rank has failed there is no timeout
// at all, so a job frozen with SIGSTOP for hours and continued is unaffected.
//
// The launcher is a child subreaper (PR_SET_CHILD_SUBREAPER): when a rank dies
// its orphaned children are reparented here, so the death of the last member
// of a rank's process group is also a SIGCHLD and "group empty" is an event,
// not a poll.
//
// --restarts N: one run of the loop above is an attempt. When an attempt ends
// with a rank's failure (see restart_policy.h for when it does not count), the
// next attempt starts every rank again with RESUME=1, at once: by then every
// process group of the old attempt is empty and reaped, its watchdog
// dismissed, its pipes drained, and any process of it that had left its rank's
// group (and so was reparented to us) has been SIGKILLed and reaped. Each
// attempt has its own watchdog and its own --log-dir files: rank-R.stdout /
// rank-R.stderr for the first, rank-R.attempt-K.stdout / .stderr for attempt
// K >= 2, so no attempt overwrites another's log. Times in an attempt's report
// count from that attempt's start. Each launcher of a multi-node job decides
// alone: launchers do not agree on restarts with each other.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launch/console.h"
#include "launch/group_watchdog.h"
#include "launch/log_dir.h"
#include "launch/options.h"
#include "launch/rank_stream.h"
#include "launch/run_summary.h"
#include "launch/signal_forwarder.h"
#include "launch/unique_fd.h"

namespace dmlp {

/// Runs the job `config` describes (with its restarts), writing rank output and
/// launcher notices to `console`. Errors are the launcher's own (command not
/// found, cannot spawn); rank failures are a LaunchReport with a non-zero ExitCode().
Result<LaunchReport> RunJob(const LaunchConfig& config, Console& console);

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC

  /// Wait for ranks to die after SIGKILL before calling them stuck.
  static constexpr std::chrono::seconds kReapAfterKill{5};
  /// Wait for pipes to reach EOF once every group is gone (a process that
  /// left its rank's group may still hold them).
  static constexpr std::chrono::seconds kDrainLimit{2};

  Supervisor(const LaunchConfig& config, Console& console);
  ~Supervisor();
  Result<LaunchReport> Run();

 private:
  enum class Phase { kRunning, kStopping, kKilling, kDraining, kDone };
  struct Rank {
    RankReport report;
    bool running = true;
    bool kill_sent = false;
    std::unique_ptr<RankStream> out;
    std::unique_ptr<RankStream> err;
  };

  // Once per launch (supervisor.cc).
  Status Prepare();
  // One attempt (supervisor.cc).
  Result<JobReport> RunAttempt(int number);
  void ResetAttempt(int number);
  Status StartAttempt();
  Status SpawnAll();
  // Between attempts (supervisor_restart.cc).
  Status ReadSignalsBetweenAttempts();
  void ReapStrays();
  std::string EndEscapedProcesses();
  Status Loop();
  Status HandleSignals();
  void OnLauncherSignal(const ReceivedSignal& received);
  void Suspend();
  void ReapChildren(const std::vector<pid_t>& first_to_change);
  void OnRankExit(Rank& rank, ExitStatus status, Clock::time_point when);
  void ShowHiddenTail(const Rank& rank);
  void BeginStop(int signal);
  void KillAll(const std::string& why);
  void NoteLeftovers(const std::vector<pid_t>& groups);
  void StartDrain();
  void Advance();
  void RecordStuck();
  void CloseStream(RankStream& stream);
  int TimeoutMs() const;
  bool AllReaped() const;
  bool AllStreamsClosed() const;
  std::vector<pid_t> LiveGroups() const;
  void SignalRanks(int signal, const std::vector<pid_t>& groups);
  int RunningCount() const;
  double Seconds(Clock::time_point when) const;
  JobReport BuildReport() const;

  const LaunchConfig& config_;
  Console& console_;
  // For the whole launch.
  std::unique_ptr<SignalForwarder> signals_;
  UniqueFd epoll_;
  UniqueFd dev_null_;
  std::optional<LogDir> log_dir_;          // --log-dir
  std::string executable_;                 // config_.command.front(), resolved once
  std::optional<rlimit> rank_file_limit_;  // set when the launcher lifted its own
  std::string host_name_;                  // gethostname(): the host of a device label without one
  int stop_signal_ = 0;                    // first SIGINT/TERM/HUP/QUIT received in any phase
  pid_t stop_sender_ = 0;
  // For the current attempt.
  int attempt_ = 1;
  Clock::time_point start_;
  std::vector<Rank> ranks_;
  GroupWatchdog watchdog_;
  Phase phase_ = Phase::kRunning;
  Clock::time_point deadline_;  // for every phase but kRunning
  std::optional<JobCause> cause_;
  int failed_index_ = -1;
  int launcher_signal_ = 0;
  pid_t signal_sender_ = 0;
  bool killed_at_once_ = false;
  std::vector<std::string> notes_;
};

}  // namespace dmlp
