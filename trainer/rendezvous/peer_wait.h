// defines: WaitClock, SteadyWaitClock, PeerWait
//
// The freeze-tolerant deadline for every wait on a peer (rendezvous, barriers).
//
// docs/reliability.md: a wait on a peer may last HEARTBEAT_TIMEOUT_SECONDS, and nothing
// else uses wall-clock timeouts. The whole job may also be frozen (SIGSTOP, a
// CRIU checkpoint and restore) for longer than that and then continued; a
// freeze must not look like a silent peer. CLOCK_MONOTONIC keeps running while
// a process is stopped, so a plain `now() > start + timeout` check would fire
// right after the job is continued.
//
// So a wait is cut into short slices (poll() for at most kMaxSlice) and only
// the time this process actually ran is counted: an interval that overran its
// requested slice by more than kFreezeOverrun means the process was not
// running, and counts as the requested slice length only. A genuinely silent
// peer still times out after the budget, because every slice of a running
// process takes about what it asked for.
#pragma once

#include <chrono>

namespace dmlp {

/// Source of monotonic time; tests inject a fake one.
class WaitClock {
 public:
  virtual ~WaitClock() = default;
  /// Monotonic time since an arbitrary origin.
  virtual std::chrono::nanoseconds Now() = 0;
};

/// The process's steady clock (CLOCK_MONOTONIC); thread-safe, never destroyed.
WaitClock& SteadyWaitClock();

/// One bounded wait: `while (!done) { poll(..., wait.BeginSlice()); wait.EndSlice();
/// if (wait.Expired()) timeout; }`. Not thread-safe; one per waiting thread.
class PeerWait {
 public:
  /// Longest single slice; also the most a freeze can add to the counted time.
  static constexpr std::chrono::milliseconds kMaxSlice{200};
  /// An interval longer than its slice by more than this was a freeze, not work.
  static constexpr std::chrono::milliseconds kFreezeOverrun{1000};

  /// A wait that expires after `budget` of running time, measured on `clock`.
  explicit PeerWait(std::chrono::milliseconds budget, WaitClock& clock = SteadyWaitClock());

  /// Starts a slice; returns its length in milliseconds for poll(): at most
  /// kMaxSlice and the remaining budget, at least 1 (0 once expired).
  int BeginSlice();
  /// Ends the slice: counts the time since the previous EndSlice (or since
  /// construction), or only the requested slice if that interval was a freeze.
  void EndSlice();
  /// Sleeps one slice (for retry loops), accounting it like a poll.
  void SleepSlice(std::chrono::milliseconds at_most = kMaxSlice);

  bool Expired() const { return counted_ >= budget_; }
  /// Running time counted against the budget so far.
  std::chrono::nanoseconds counted() const { return counted_; }
  std::chrono::milliseconds budget() const { return budget_; }
  /// Number of intervals that were treated as freezes (for diagnostics and tests).
  int freezes_seen() const { return freezes_seen_; }

 private:
  WaitClock& clock_;
  std::chrono::milliseconds budget_;
  std::chrono::nanoseconds counted_{0};
  std::chrono::nanoseconds last_mark_;
  std::chrono::milliseconds requested_{0};
  int freezes_seen_ = 0;
};

}  // namespace dmlp
