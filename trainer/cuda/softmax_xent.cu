#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/cuda/softmax_xent.h"
#include "trainer/math/device_macros.h"
#include "trainer/math/softmax_xent_row.h"

namespace dmlp::cuda {
namespace {

// Bit-equal to the CPU platform (trainer/cpu/mlp_cpu.cc): one thread owns one
// sample and runs the chain the CPU runs on it, the same function
// (trainer/math/softmax_xent_row.h: un-fused float operations, dmlp's ExpF and
// LogF). No sharing between threads, so no order depends on timing. (One
// thread per row suits the small CLASSES of this job; the row is read from
// L1/L2 after the first pass.)
__global__ void softmax_xent_forward_backward_kernel(const float* logits, const int32_t* labels,
                                                     int64_t rows, int64_t classes, float batch,
                                                     float* dlogits, float* row_loss) {
  for (int64_t row = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; row < rows;
       row += int64_t{gridDim.x} * blockDim.x)
    row_loss[row] = SoftmaxXentRow(logits + row * classes, labels[row], classes, batch,
                                   dlogits + row * classes);
}

// Bit-equal to the CPU platform: one thread adds the losses in sample order
// 0, 1, ..., rows-1 from +0, as the CPU's loop does. A shard has a few hundred
// samples, so one sequential chain costs microseconds; a parallel tree would
// round differently.
__global__ void loss_sum_kernel(const float* row_loss, int64_t rows, float* loss_sum) {
  float sum = 0.0f;
  for (int64_t row = 0; row < rows; ++row) sum = FAdd(sum, row_loss[row]);
  *loss_sum = sum;
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
  loss_sum_kernel<<<1, 1, 0, stream>>>(row_loss, rows, loss_sum);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
