#include "trainer/rendezvous/silence_tracker.h"

#include <algorithm>

namespace dmlp {

SilenceTracker::SilenceTracker(int ranks, std::chrono::milliseconds budget, WaitClock& clock)
    : clock_(clock),
      budget_(budget),
      watched_(static_cast<size_t>(ranks), false),
      silence_(static_cast<size_t>(ranks), std::chrono::nanoseconds(0)),
      last_mark_(clock.Now()) {}

void SilenceTracker::Heard(int rank) {
  if (rank < 0 || rank >= static_cast<int>(watched_.size())) return;
  watched_[rank] = true;
  silence_[rank] = std::chrono::nanoseconds(0);
}

void SilenceTracker::Forget(int rank) {
  if (rank < 0 || rank >= static_cast<int>(watched_.size())) return;
  watched_[rank] = false;
}

int SilenceTracker::BeginSlice() {
  if (std::none_of(watched_.begin(), watched_.end(), [](bool watched) { return watched; })) {
    requested_ = std::chrono::milliseconds(0);
    return -1;
  }
  requested_ = PeerWait::kMaxSlice;
  return static_cast<int>(requested_.count());
}

void SilenceTracker::EndSlice() {
  const std::chrono::nanoseconds now = clock_.Now();
  std::chrono::nanoseconds interval = std::max(now - last_mark_, std::chrono::nanoseconds(0));
  last_mark_ = now;
  // Unwatched (infinite) slices count nothing: nobody was being timed.
  if (requested_.count() == 0) return;
  // The same rule as PeerWait::EndSlice: far past the slice means this process
  // was not running, and a peer cannot be blamed for our own freeze.
  if (interval > requested_ + PeerWait::kFreezeOverrun) {
    interval = requested_;
    ++freezes_seen_;
  }
  for (size_t rank = 0; rank < watched_.size(); ++rank) {
    if (watched_[rank]) silence_[rank] += interval;
  }
}

int SilenceTracker::FirstSilent() const {
  for (size_t rank = 0; rank < watched_.size(); ++rank) {
    if (watched_[rank] && silence_[rank] >= budget_) return static_cast<int>(rank);
  }
  return -1;
}

}  // namespace dmlp
