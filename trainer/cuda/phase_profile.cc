#include "trainer/cuda/phase_profile.h"

#include "trainer/cuda/cuda_check.h"

namespace dmlp::cuda {

Status PhaseProfile::Begin(cudaStream_t stream) { return Record(-1, stream); }

Status PhaseProfile::Mark(Phase phase, cudaStream_t stream) { return Record(phase, stream); }

Status PhaseProfile::Record(int phase, cudaStream_t stream) {
  const size_t index = marks_.size();
  if (index == pool_.size()) {
    DMLP_ASSIGN_OR_RETURN(CudaEvent event, CudaEvent::Create(/*timing=*/true));
    pool_.push_back(std::move(event));
  }
  CUDA_CHECK(cudaEventRecord(pool_[index].get(), stream));
  marks_.emplace_back(phase, index);
  return Status::Ok();
}

Status PhaseProfile::Harvest() {
  refused_intervals_ += AddIntervals(marks_, [this](size_t from, size_t to, float* milliseconds) {
    const cudaError_t error = cudaEventElapsedTime(milliseconds, pool_[from].get(), pool_[to].get());
    // Not a sticky error, but cudaGetLastError would still report it after the
    // next launch (STYLE: every launch is checked): cleared here, where it is judged.
    if (error != cudaSuccess) (void)cudaGetLastError();
    return error;
  }, seconds_);
  marks_.clear();
  return Status::Ok();
}

int64_t PhaseProfile::AddIntervals(const Marks& marks, const ElapsedFunction& elapsed, double* seconds) {
  int64_t refused = 0;
  for (size_t i = 1; i < marks.size(); ++i) {
    const int phase = marks[i].first;
    if (phase < 0) continue;  // a Begin: no interval ends here
    float milliseconds = 0;
    if (elapsed(marks[i - 1].second, marks[i].second, &milliseconds) != cudaSuccess) {
      ++refused;  // e.g. the two events straddle a checkpoint: advisory figures only
      continue;
    }
    seconds[phase] += milliseconds / 1000.0;
  }
  return refused;
}

nlohmann::json PhaseProfile::Seconds() const {
  return {{"data", seconds_[kData]},
          {"compute", seconds_[kCompute]},
          {"collectives", seconds_[kCollectives]},
          {"optimizer", seconds_[kOptimizer]}};
}

}  // namespace dmlp::cuda
