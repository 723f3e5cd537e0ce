// defines: FoldShardsOnDevice
//
// The ordered shard fold of the reduction (trainer/math/ordered_reduce.h) on the
// device: the same additions, in the same order, as FoldShardsInOrder.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/status.h"

namespace dmlp::cuda {

/// out[e] = ((partials[e] + partials[stride + e]) + partials[2 stride + e]) + ...
/// over `shards` partials, for e < length. Device pointers; enqueued on `stream`.
/// REQUIRES: shards >= 1; out does not overlap partials.
Status FoldShardsOnDevice(const float* partials, size_t shards, size_t stride, size_t length,
                          float* out, cudaStream_t stream);

}  // namespace dmlp::cuda
