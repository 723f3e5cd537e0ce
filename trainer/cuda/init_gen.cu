#include <string>

#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/init_gen.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/init.h"
#include "trainer/philox.h"
#include "trainer/sample_math.h"

namespace dmlp::cuda {
namespace {

// Bit-equal to InitParams: one thread per kernel element runs InitKernelValue
// (integer Philox, un-fused IEEE operations, a bounded rejection loop) with
// the float scale computed on the host by KernelInitScale. Nothing is shared.
__global__ void init_kernel_kernel(PhiloxKey key, uint32_t layer, float scale, size_t elements,
                                   float* out) {
  for (size_t e = size_t{blockIdx.x} * blockDim.x + threadIdx.x; e < elements;
       e += size_t{gridDim.x} * blockDim.x) {
    out[e] = InitKernelValue(key, static_cast<uint32_t>(e), layer, scale);
  }
}

}  // namespace

Status InitParamsOnDevice(const StateLayout& layout, uint64_t seed, float* params,
                          cudaStream_t stream) {
  DMLP_RETURN_IF_ERROR(CheckInitLimits(layout));
  const PhiloxKey key = PhiloxKeyFromSeed(seed);
  for (const StateLeaf& leaf : layout.leaves()) {
    float* out = params + leaf.offset;
    if (!leaf.is_kernel) {
      CUDA_CHECK(cudaMemsetAsync(out, 0, leaf.size * sizeof(float), stream));  // +0.0f bits
      continue;
    }
    const float scale = KernelInitScale(layout.fan_in(leaf.layer));
    init_kernel_kernel<<<GridBlocks(leaf.size), kThreadsPerBlock, 0, stream>>>(
        key, static_cast<uint32_t>(leaf.layer), scale, leaf.size, out);
    CUDA_CHECK(cudaGetLastError());
  }
  return Status::Ok();
}

}  // namespace dmlp::cuda
