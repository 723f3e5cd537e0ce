#include "trainer/reduction/ordered_reduction.h"

namespace dmlp {

Result<const float*> OrderedReduction::Reduce(const ReductionBuffers& buffers, const std::string& update) {
  if (reduction_ == Reduction::kOrdered && transport_ != nullptr) return ReduceExchanged(buffers, update);
  DMLP_ASSIGN_OR_RETURN(float* sum, ReduceLocal(buffers));
  if (reduction_ == Reduction::kAllreduce && transport_ != nullptr) {
    DMLP_RETURN_IF_ERROR(transport_->AllReduceSum(sum, layout_.padded_length()));
  }
  return static_cast<const float*>(sum);
}

// The local shards folded in order; a fold of one shard is that shard's
// bits, so one shard is its own sum.
Result<float*> OrderedReduction::ReduceLocal(const ReductionBuffers& buffers) {
  if (layout_.shards_per_rank == 1) return buffers.partials;
  DMLP_RETURN_IF_ERROR(fold_.Fold(buffers.partials, layout_.shards_per_rank, buffers.partial_stride,
                                  layout_.padded_length(), buffers.reduced));
  return buffers.reduced;
}

// This rank's slice folds straight into its place in the reduced vector; the
// gather then runs in place.
Result<const float*> OrderedReduction::ReduceExchanged(const ReductionBuffers& buffers, const std::string& update) {
  const size_t slice = layout_.slice_length();
  DMLP_ASSIGN_OR_RETURN(ShardSlices exchanged, transport_->Exchange(buffers.partials, layout_.shards_per_rank,
                                                                    buffers.partial_stride, slice));
  float* own = buffers.reduced + rank_ * slice;
  if (Status folded = transport_->FoldExchanged(fold_, exchanged, data_shards_, slice, own); !folded.ok()) {
    return update.empty() ? folded : folded.WithContext(update);
  }
  DMLP_RETURN_IF_ERROR(transport_->Gather(own, buffers.reduced, slice));
  return static_cast<const float*>(buffers.reduced);
}

}  // namespace dmlp
