#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/fold.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/math/device_macros.h"

namespace dmlp::cuda {
namespace {

// Bit-equal to FoldShardsInOrder: element e is owned by one thread, which
// starts from shard 0's value (a copy, as the CPU's memcpy) and adds shards
// 1, 2, ... in shard order, each add correctly rounded and never fused. The
// order is fixed by the loop, not by the launch, so the bits are the CPU's.
__global__ void fold_shards_kernel(const float* partials, size_t shards, size_t stride,
                                   size_t length, float* out) {
  for (size_t e = size_t{blockIdx.x} * blockDim.x + threadIdx.x; e < length;
       e += size_t{gridDim.x} * blockDim.x) {
    float sum = partials[e];
    for (size_t shard = 1; shard < shards; ++shard) sum = FAdd(sum, partials[shard * stride + e]);
    out[e] = sum;
  }
}

}  // namespace

Status FoldShardsOnDevice(const float* partials, size_t shards, size_t stride, size_t length,
                          float* out, cudaStream_t stream) {
  if (shards < 1 || length < 1 || (shards > 1 && stride < length))
    return Status::Error(kInternal, "FoldShardsOnDevice: bad shape");
  fold_shards_kernel<<<GridBlocks(length), kThreadsPerBlock, 0, stream>>>(partials, shards, stride,
                                                                          length, out);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
