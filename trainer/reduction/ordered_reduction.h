// defines: ReductionBuffers, OrderedReduction
//
// Step 2 of an update (trainer/backend.h), written once for both platforms:
// the schedule that decides the gradient's bits. A platform supplies its
// adder and its byte mover (reduction_transport.h) and the buffers.
//
// REDUCTION=ordered (trainer/math/ordered_reduce.h for the layout): each
// rank's partials go out slice by slice (Exchange), each rank folds its slice of all DATA_SHARDS partials in global shard
// order, ((s0 + s1) + s2) + ..., into its slice of the reduced vector, and
// the folded slices are gathered. One rank has nothing to exchange: the same
// left fold over all its shards. Every addition is the fold's, in shard
// order, so NUM_PROCESSES and the transport cannot change a bit.
//
// REDUCTION=allreduce: the local shards folded in order, then the library's
// all-reduce over the padded length. Padded, not P + 1: the padding is zeros
// on every rank, so its sum is zeros and costs nothing, and the CPU's
// receipts, which the tests pin, were made with the padded count. For Gloo's
// ring all-reduce below its 1 MiB segments both counts give every element
// the same segment and so the same order (the segment is ceil(n / 2W)
// floats either way); NCCL's own order is NCCL's (docs/determinism.md).
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"
#include "trainer/math/ordered_reduce.h"
#include "trainer/plan.h"
#include "trainer/reduction/reduction_transport.h"

namespace dmlp {

/// One rank's reduction buffers, in the platform's memory.
struct ReductionBuffers {
  float* partials = nullptr;  // [local shard][partial_stride]: gradient, loss sum, zeros
  size_t partial_stride = 0;  // >= padded length
  float* reduced = nullptr;   // [padded]: the global gradient, loss sum, zeros
};

class OrderedReduction {
 public:
  /// `transport` null: one rank. REQUIRES: `fold` and `transport` outlive this.
  OrderedReduction(Reduction reduction, const ReductionLayout& layout, int rank, size_t data_shards,
                   ShardFold& fold, ReductionTransport* transport)
      : reduction_(reduction),
        layout_(layout),
        rank_(static_cast<size_t>(rank)),
        data_shards_(data_shards),
        fold_(fold),
        transport_(transport) {}

  /// Reduces the partials of this update; returns where the sum (padded:
  /// gradient, loss sum, zeros) is: buffers.reduced, or the one partial
  /// itself when there is nothing to add or exchange. `update` ("step S
  /// microbatch M") names the update when a check of the exchanged bytes fails.
  Result<const float*> Reduce(const ReductionBuffers& buffers, const std::string& update);

  const ReductionLayout& layout() const { return layout_; }

 private:
  Result<float*> ReduceLocal(const ReductionBuffers& buffers);
  Result<const float*> ReduceExchanged(const ReductionBuffers& buffers, const std::string& update);

  Reduction reduction_;
  ReductionLayout layout_;
  size_t rank_;
  size_t data_shards_;
  ShardFold& fold_;
  ReductionTransport* transport_;  // null with one rank
};

}  // namespace dmlp
