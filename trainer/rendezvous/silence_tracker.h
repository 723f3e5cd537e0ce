// defines: SilenceTracker
//
// The coordinator's side of the liveness rule (docs/reliability.md, HEARTBEAT_TIMEOUT_SECONDS):
// every rank pings the coordinator on its own connection (peer_monitor.h), and
// a rank not heard from for the heartbeat timeout of the coordinator's *running*
// time is lost. Time is counted as PeerWait counts it (peer_wait.h): the server
// loop polls in slices, and an interval that overran its slice by more than
// PeerWait::kFreezeOverrun was a freeze of this process (SIGSTOP, CRIU, a clock
// jump) and counts as the slice only. So a whole job frozen and continued never
// looks silent, while one stopped rank does, after the timeout.
#pragma once

#include <chrono>
#include <vector>

#include "trainer/rendezvous/peer_wait.h"

namespace dmlp {

class SilenceTracker {
 public:
  /// Tracks ranks 0..ranks-1; none is watched until first Heard().
  SilenceTracker(int ranks, std::chrono::milliseconds budget, WaitClock& clock);

  /// `rank` spoke: (re)starts watching it with no silence counted.
  void Heard(int rank);
  /// Stops watching `rank` (it left, or its liveness connection closed).
  void Forget(int rank);
  /// Poll timeout in ms for the next slice: -1 (wait forever) while no rank is
  /// watched, else at most PeerWait::kMaxSlice.
  int BeginSlice();
  /// Counts the running time since the last EndSlice against every watched rank.
  void EndSlice();
  /// The first watched rank silent for the whole budget, or -1.
  int FirstSilent() const;
  std::chrono::milliseconds budget() const { return budget_; }
  /// Intervals treated as freezes so far (tests and diagnostics).
  int freezes_seen() const { return freezes_seen_; }

 private:
  WaitClock& clock_;
  std::chrono::milliseconds budget_;
  std::vector<bool> watched_;
  std::vector<std::chrono::nanoseconds> silence_;
  std::chrono::nanoseconds last_mark_;
  std::chrono::milliseconds requested_{0};
  int freezes_seen_ = 0;
};

}  // namespace dmlp
