#include "trainer/rendezvous/peer_wait.h"

#include <poll.h>

#include <algorithm>

namespace dmlp {
namespace {

class SteadyClock final : public WaitClock {
 public:
  std::chrono::nanoseconds Now() override {
    return std::chrono::steady_clock::now().time_since_epoch();
  }
};

}  // namespace

WaitClock& SteadyWaitClock() {
  static SteadyClock* clock = new SteadyClock();  // never destroyed: usable from any static dtor
  return *clock;
}

PeerWait::PeerWait(std::chrono::milliseconds budget, WaitClock& clock)
    : clock_(clock), budget_(budget), last_mark_(clock.Now()) {}

int PeerWait::BeginSlice() {
  if (Expired()) {
    requested_ = std::chrono::milliseconds(0);
    return 0;
  }
  auto remaining = std::chrono::ceil<std::chrono::milliseconds>(budget_ - counted_);
  requested_ = std::clamp(remaining, std::chrono::milliseconds(1), kMaxSlice);
  return static_cast<int>(requested_.count());
}

void PeerWait::EndSlice() {
  std::chrono::nanoseconds now = clock_.Now();
  std::chrono::nanoseconds interval = std::max(now - last_mark_, std::chrono::nanoseconds(0));
  last_mark_ = now;
  // The interval covers the slice plus whatever ran between slices (reading a
  // frame, a connect attempt). Overrunning the request by far means the process
  // was stopped or checkpointed meanwhile: that time is nobody's silence.
  if (interval > requested_ + kFreezeOverrun) {
    interval = requested_;
    ++freezes_seen_;
  }
  counted_ += interval;
}

void PeerWait::SleepSlice(std::chrono::milliseconds at_most) {
  int slice_ms = std::min(BeginSlice(), static_cast<int>(at_most.count()));
  requested_ = std::chrono::milliseconds(slice_ms);
  if (slice_ms > 0) {
    // poll() with no descriptors is a sleep that returns early only on a signal;
    // EINTR needs no handling because EndSlice counts whatever time passed.
    poll(nullptr, 0, slice_ms);
  }
  EndSlice();
}

}  // namespace dmlp
