// defines: PhaseProfile
//
// Device time per phase of an update ("data", "compute", "collectives",
// "optimizer"), measured with timing events on the compute stream, for
// Backend::Profile() and the benchmark's split of a step. Events are recorded
// as work is enqueued and read only after the caller waited for the stream, so
// profiling never adds a host synchronization.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
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
  /// Adds up every interval recorded so far. REQUIRES: the stream passed them all.
  Status Harvest();
  /// {"data": s, "compute": s, "collectives": s, "optimizer": s}.
  nlohmann::json Seconds() const;

 private:
  Status Record(int phase, cudaStream_t stream);

  std::vector<CudaEvent> pool_;                // reused after each Harvest
  std::vector<std::pair<int, size_t>> marks_;  // (phase, or -1 for a Begin; pool index)
  double seconds_[kPhaseCount] = {};
};

}  // namespace dmlp::cuda
