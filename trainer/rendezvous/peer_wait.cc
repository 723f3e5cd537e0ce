#include "trainer/rendezvous/peer_wait.h"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace dmlp {
namespace {

// Tests only: DMLP_TEST_CLOCK_JUMP_SECONDS=S makes this clock jump forward by
// S seconds once, a second after its first use, as a suspended VM's clock
// does. Such a jump cannot be told from a freeze and must count as one.
std::chrono::nanoseconds InjectedJump() {
  static const std::chrono::seconds jump = [] {
    const char* text = std::getenv("DMLP_TEST_CLOCK_JUMP_SECONDS");
    return std::chrono::seconds(text != nullptr ? std::strtol(text, nullptr, 10) : 0);
  }();
  return jump;
}

class SteadyClock final : public WaitClock {
 public:
  std::chrono::nanoseconds Now() override {
    const std::chrono::nanoseconds now = std::chrono::steady_clock::now().time_since_epoch();
    if (InjectedJump().count() <= 0) return now;
    const std::chrono::nanoseconds first = first_.load() != 0 ? std::chrono::nanoseconds(first_.load()) : Mark(now);
    return now - first >= std::chrono::seconds(1) ? now + InjectedJump() : now;
  }

 private:
  std::chrono::nanoseconds Mark(std::chrono::nanoseconds now) {
    int64_t expected = 0;
    first_.compare_exchange_strong(expected, now.count());
    return std::chrono::nanoseconds(first_.load());
  }
  std::atomic<int64_t> first_{0};
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
