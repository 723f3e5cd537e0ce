#include "trainer/cuda/bias_relu.h"
#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/math/device_macros.h"

namespace dmlp::cuda {
namespace {

// Bit-exact: each element gets one correctly rounded add (never fused, FAdd)
// and a compare, computed by exactly one thread; no reduction at all.
__global__ void bias_relu_forward_kernel(float* y, const float* bias, int64_t rows, int64_t cols,
                                         bool relu) {
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    float* y_row = y + row * cols;
    for (int64_t col = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; col < cols;
         col += int64_t{gridDim.x} * blockDim.x) {
      float value = FAdd(y_row[col], bias[col]);
      if (relu && !(value > 0.0f || value != value)) value = 0.0f;
      y_row[col] = value;
    }
  }
}

// Bit-exact: a select per element, no arithmetic.
__global__ void relu_backward_kernel(float* delta, const float* activation, int64_t count) {
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < count;
       e += int64_t{gridDim.x} * blockDim.x) {
    if (!(activation[e] > 0.0f)) delta[e] = 0.0f;
  }
}

}  // namespace

Status BiasReluForward(float* y, const float* bias, int64_t rows, int64_t cols, bool relu,
                       cudaStream_t stream) {
  if (rows < 1 || cols < 1) return Status::Error(kInternal, "BiasReluForward: empty shape");
  const dim3 grid(GridBlocks(static_cast<uint64_t>(cols)),
                  GridBlocks(static_cast<uint64_t>(rows), 1));
  bias_relu_forward_kernel<<<grid, kThreadsPerBlock, 0, stream>>>(y, bias, rows, cols, relu);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

Status ReluBackward(float* delta, const float* activation, int64_t count, cudaStream_t stream) {
  if (count < 1) return Status::Error(kInternal, "ReluBackward: empty shape");
  relu_backward_kernel<<<GridBlocks(static_cast<uint64_t>(count)), kThreadsPerBlock, 0, stream>>>(
      delta, activation, count);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
