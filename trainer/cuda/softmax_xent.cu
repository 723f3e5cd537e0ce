#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/cuda/softmax_xent.h"
#include "trainer/math/device_macros.h"

namespace dmlp::cuda {
namespace {

// Deterministic: one thread owns one sample and walks its classes in index
// order (the CPU loop's order): max, sum of exponentials, loss, gradient, with
// un-fused operations. expf/logf are CUDA's IEEE-mode functions (no
// -use_fast_math), the same bits for the same input on every run. No sharing
// between threads, so no order can depend on timing. (One thread per row suits
// the small CLASSES of this job; the row is read from L1/L2 after the first pass.)
__global__ void softmax_xent_forward_backward_kernel(const float* logits, const int32_t* labels,
                                                     int64_t rows, int64_t classes, float batch,
                                                     float* dlogits, float* row_loss) {
  for (int64_t row = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; row < rows;
       row += int64_t{gridDim.x} * blockDim.x) {
    const float* z = logits + row * classes;
    float* d = dlogits + row * classes;
    float row_max = z[0];
    for (int64_t j = 1; j < classes; ++j)
      if (z[j] > row_max) row_max = z[j];
    float sum = 0.0f;
    for (int64_t j = 0; j < classes; ++j) {
      d[j] = expf(FSub(z[j], row_max));
      sum = FAdd(sum, d[j]);
    }
    const int32_t label = labels[row];
    row_loss[row] = FSub(logf(sum), FSub(z[label], row_max));
    for (int64_t j = 0; j < classes; ++j)
      d[j] = FDiv(FSub(FDiv(d[j], sum), j == label ? 1.0f : 0.0f), batch);
  }
}

// Bit-exact run to run: one block of a fixed kLossSumThreads threads; thread t
// sums rows t, t + T, t + 2T, ... in that order, then a fixed pairwise tree in
// shared memory (stride T/2, T/4, ..., 1) combines the partial sums. Neither
// the assignment nor the tree depends on timing or on anything but `rows`, so
// the same inputs give the same bits. (Not the CPU's sequential order: the CPU
// platform's losses are close, not equal, anyway.)
__global__ void loss_sum_kernel(const float* row_loss, int64_t rows, float* loss_sum) {
  __shared__ float partial[kLossSumThreads];
  float sum = 0.0f;
  for (int64_t row = threadIdx.x; row < rows; row += kLossSumThreads)
    sum = FAdd(sum, row_loss[row]);
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kLossSumThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride)
      partial[threadIdx.x] = FAdd(partial[threadIdx.x], partial[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss_sum = partial[0];
}

}  // namespace

Status SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t rows,
                           int64_t classes, int64_t global_batch, float* dlogits, float* row_loss,
                           float* loss_sum, cudaStream_t stream) {
  if (rows < 1 || classes < 1 || global_batch < 1)
    return Status::Error(kInternal, "SoftmaxCrossEntropy: empty shape");
  softmax_xent_forward_backward_kernel<<<GridBlocks(static_cast<uint64_t>(rows)), kThreadsPerBlock,
                                         0, stream>>>(
      logits, labels, rows, classes, static_cast<float>(global_batch), dlogits, row_loss);
  CUDA_CHECK(cudaGetLastError());
  loss_sum_kernel<<<1, kLossSumThreads, 0, stream>>>(row_loss, rows, loss_sum);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
