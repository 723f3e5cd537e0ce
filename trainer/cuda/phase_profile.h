// defines: PhaseProfile
//
// Device time per phase of an update ("data", "compute", "collectives",
// "optimizer"), measured with timing events on the compute stream, for
// Backend::Profile() and the benchmark's split of a step. Events are recorded
// as work is enqueued and read only after the caller waited for the stream, so
// profiling never adds a host synchronization. Profiling is advisory: a pair
// of events the driver will not time (cudaEventElapsedTime refuses a pair
// recorded across a CUDA checkpoint and restore) is left out and counted,
// never an error of the rank.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/status.h"
#include "trainer/cuda/device_buffer.h"

namespace dmlp::cuda {

class PhaseProfile {
 public:
  enum Phase { kData = 0, kCompute, kCollectives, kOptimizer, kPhaseCount };

  /// Starts a chain of intervals at this point of `stream`.
  Status Begin(cudaStream_t stream);
  /// Ends the current interval here and books it to `phase`.
  Status Mark(Phase phase, cudaStream_t stream);
  /// Adds up every interval recorded so far; always OK (see the top).
  /// REQUIRES: the stream passed them all.
  Status Harvest();
  /// {"data": s, "compute": s, "collectives": s, "optimizer": s}.
  nlohmann::json Seconds() const;
  /// Intervals left out because the driver would not time them.
  int64_t refused_intervals() const { return refused_intervals_; }

  /// (phase, or -1 for a Begin; index of its event in the pool), in recording order.
  using Marks = std::vector<std::pair<int, size_t>>;
  /// Milliseconds between two of the pool's events (by index), or the driver's refusal.
  using ElapsedFunction = std::function<cudaError_t(size_t from, size_t to, float* milliseconds)>;
  /// Adds each interval that ends at a phase's mark to seconds[phase]; returns how
  /// many the timing call refused (left out). Harvest's bookkeeping, apart from
  /// the events, so that a unit test drives it without a GPU.
  static int64_t AddIntervals(const Marks& marks, const ElapsedFunction& elapsed, double* seconds);

 private:
  Status Record(int phase, cudaStream_t stream);

  std::vector<CudaEvent> pool_;                // reused after each Harvest
  Marks marks_;
  double seconds_[kPhaseCount] = {};
  int64_t refused_intervals_ = 0;
};

}  // namespace dmlp::cuda
