// defines: SignalForwarder, ReceivedSignal, kTerminationSignals, kForwardOnlySignals
//
// RAII owner of the launcher's signal handling. While it lives, the signals it
// was given are blocked and arrive instead as records on a signalfd that the
// event loop reads like any other descriptor: no async handlers, no
// self-pipe, no flag races, and SIGCHLD is just another readable event.
// SIGPIPE is ignored (a closed console must not kill the supervisor of N
// GPUs). Destruction restores the old mask and dispositions.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <memory>
#include <vector>

#include "common/status.h"
#include "launch/unique_fd.h"

namespace dmlp {

/// Signals that stop the job: forwarded (SIGALRM as SIGTERM), then grace, then SIGKILL.
inline constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM};
/// Signals passed on to every rank and otherwise ignored.
inline constexpr int kForwardOnlySignals[] = {SIGUSR1, SIGUSR2};

struct ReceivedSignal {
  int signal = 0;
  pid_t sender_pid = 0;  // 0 when the kernel sent it (terminal, SIGCHLD from a child is its pid)
};

class SignalForwarder {
 public:
  /// Blocks `signals`, opens a non-blocking signalfd for them and ignores SIGPIPE.
  static Result<std::unique_ptr<SignalForwarder>> Create(const std::vector<int>& signals);
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

  /// The signalfd: readable when a signal is pending.
  int fd() const { return fd_.get(); }
  /// Every signal pending now (empty when none). Standard signals coalesce:
  /// two SIGCHLDs may arrive as one record, so SIGCHLD means "reap all".
  Result<std::vector<ReceivedSignal>> ReadPending();
  /// Sends `signal` to each process group in `groups` (kill(-pgid)); returns
  /// how many groups still existed.
  static int SendToGroups(int signal, const std::vector<pid_t>& groups);

 private:
  SignalForwarder() = default;

  UniqueFd fd_;
  sigset_t old_mask_{};
  struct sigaction old_sigpipe_ {};
};

/// True for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM.
bool IsTerminationSignal(int signal);

}  // namespace dmlp
