#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/init_gen.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/math/init.h"
#include "trainer/math/sample_math.h"

namespace dmlp::cuda {
namespace {

// Bit-equal to InitParams: one thread per kernel element runs JaxBits32 and
// JaxTruncatedNormalFromBits (integer threefry, IEEE operations rounded as
// written, FMAs explicit) times the float stddev computed on the host by
// LecunNormalStddev, as init.cc's loops. Nothing is shared.
__global__ void init_kernel_kernel(JaxKey kernel_key, float stddev, size_t elements, float* out) {
  for (size_t e = size_t{blockIdx.x} * blockDim.x + threadIdx.x; e < elements;
       e += size_t{gridDim.x} * blockDim.x) {
    out[e] = FMul(JaxTruncatedNormalFromBits(JaxBits32(kernel_key, e)), stddev);
  }
}

}  // namespace

Status InitParamsOnDevice(const StateLayout& layout, uint32_t seed, float* params,
                          cudaStream_t stream) {
  const JaxKey init_key = InitKey(seed);
  for (const StateLeaf& leaf : layout.leaves()) {
    float* out = params + leaf.offset;
    if (!leaf.is_kernel) {
      CUDA_CHECK(cudaMemsetAsync(out, 0, leaf.size * sizeof(float), stream));  // +0.0f bits
      continue;
    }
    const JaxKey kernel_key = DenseKernelKey(init_key, FlaxDenseHash(leaf.layer));
    const float stddev = LecunNormalStddev(layout.fan_in(leaf.layer));
    init_kernel_kernel<<<GridBlocks(leaf.size), kThreadsPerBlock, 0, stream>>>(kernel_key, stddev,
                                                                               leaf.size, out);
    CUDA_CHECK(cudaGetLastError());
  }
  return Status::Ok();
}

}  // namespace dmlp::cuda
