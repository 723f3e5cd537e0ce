// defines: DeviceCollectives, DeviceReductionTransport
//
// The collectives the CUDA backend runs on device buffers, in stream order:
// NCCL (nccl_collectives.h, one GPU per rank) or Gloo staged through pinned
// host memory (gloo_staged.h, COLLECTIVES=gloo: several ranks may share a
// GPU). With REDUCTION=ordered both only move bytes (the fold kernel adds),
// so the choice cannot change a bit; AllReduceSum is each library's own sum.
// Either is the ordered reduction's transport (trainer/reduction/) through
// DeviceReductionTransport, on the update's stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "common/status.h"
#include "trainer/reduction/reduction_transport.h"

namespace dmlp::cuda {

class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;

  /// Ordered reduction's all-to-all: rank q receives slice q of every local
  /// shard partial of every rank. partials: [local shard][stride] (slice q of
  /// shard s at s * stride + q * slice); receive: [rank][local shard][slice],
  /// i.e. global shard order. On `stream`.
  virtual Status AllToAllSlices(const float* partials, size_t local_shards, size_t stride,
                                size_t slice, float* receive, cudaStream_t stream) = 0;
  /// receive[q * count, (q+1) * count) = rank q's send; in place when send ==
  /// receive + rank * count. On `stream`.
  virtual Status AllGather(const float* send, float* receive, size_t count,
                           cudaStream_t stream) = 0;
  /// In-place element-wise sum over ranks (the library decides the order). On `stream`.
  virtual Status AllReduceSum(float* data, size_t count, cudaStream_t stream) = 0;

  /// An error once queued work can no longer complete (a peer failed).
  /// Thread-safe: the snapshot waiter calls it from a hasher thread.
  virtual Status CheckAsyncError() const = 0;
  /// The rank failed elsewhere: tear down without waiting for peers.
  virtual void MarkFailed() = 0;
  /// For result.json's fingerprint: "nccl", "gloo 0.5.0 tcp, staged through host".
  virtual std::string Description() const = 0;
};

/// Any DeviceCollectives as the ordered reduction's transport, on `stream`:
/// the exchange lands in `receive` ([global shard][slice]: DATA_SHARDS
/// slices), the gather runs in place.
class DeviceReductionTransport final : public ReductionTransport {
 public:
  /// REQUIRES: `collectives`, `stream` and `receive` outlive this.
  DeviceReductionTransport(DeviceCollectives& collectives, cudaStream_t stream, float* receive)
      : collectives_(collectives), stream_(stream), receive_(receive) {}

  Result<ShardSlices> Exchange(const float* partials, size_t local_shards, size_t stride,
                               size_t slice) override {
    DMLP_RETURN_IF_ERROR(
        collectives_.AllToAllSlices(partials, local_shards, stride, slice, receive_, stream_));
    return ShardSlices{receive_, slice};
  }
  Status Gather(float* own, float* reduced, size_t slice) override {
    return collectives_.AllGather(own, reduced, slice, stream_);
  }
  Status AllReduceSum(float* data, size_t count) override {
    return collectives_.AllReduceSum(data, count, stream_);
  }

 private:
  DeviceCollectives& collectives_;
  cudaStream_t stream_;
  float* receive_;  // null unless REDUCTION=ordered
};

}  // namespace dmlp::cuda
