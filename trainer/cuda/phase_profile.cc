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
  for (size_t i = 1; i < marks_.size(); ++i) {
    const int phase = marks_[i].first;
    if (phase < 0) continue;  // a Begin: no interval ends here
    float milliseconds = 0;
    CUDA_CHECK(cudaEventElapsedTime(&milliseconds, pool_[marks_[i - 1].second].get(),
                                    pool_[marks_[i].second].get()));
    seconds_[phase] += milliseconds / 1000.0;
  }
  marks_.clear();
  return Status::Ok();
}

nlohmann::json PhaseProfile::Seconds() const {
  return {{"data", seconds_[kData]},
          {"compute", seconds_[kCompute]},
          {"collectives", seconds_[kCollectives]},
          {"optimizer", seconds_[kOptimizer]}};
}

}  // namespace dmlp::cuda
