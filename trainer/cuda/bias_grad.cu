#include "trainer/cuda/bias_grad.h"

#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/math/device_macros.h"

namespace dmlp::cuda {
namespace {

// One thread per column, its sum in row order from +0: the CPU's chain, so
// the CPU's bits (a split into row chunks combined by a tree, as this kernel
// once did, is faster but rounds otherwise). Neighbouring threads read
// neighbouring columns of a row, so each row's read is coalesced; the chain is
// as long as the shard, which the GEMMs around it outweigh (mnk against mn).
__global__ void bias_grad_kernel(const float* delta, int64_t rows, int64_t cols, float* out) {
  for (int64_t col = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; col < cols;
       col += int64_t{gridDim.x} * blockDim.x) {
    float sum = 0.0f;
    for (int64_t row = 0; row < rows; ++row) sum = FAdd(sum, delta[row * cols + col]);
    out[col] = sum;
  }
}

}  // namespace

Status BiasGradient(const float* delta, int64_t rows, int64_t cols, float* out, cudaStream_t stream) {
  if (rows < 1 || cols < 1) return Status::Error(kInternal, "BiasGradient: empty shape");
  bias_grad_kernel<<<GridBlocks(static_cast<uint64_t>(cols)), kThreadsPerBlock, 0, stream>>>(
      delta, rows, cols, out);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
