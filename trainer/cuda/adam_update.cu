#include "trainer/cuda/adam_update.h"
#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/launch_util.h"

namespace dmlp::cuda {
namespace {

// Bit-equal to AdamUpdate on the host (trainer/cpu/adam_cpu.h): each element
// is updated by one thread with AdamElement, whose operations are un-fused
// IEEE intrinsics on the device (device_macros.h); the bias corrections come
// from the host as float32 scalars, so no powf runs here. No element depends on another.
__global__ void adam_update_kernel(AdamScalars scalars, const float* grad, float* params, float* mu,
                                   float* nu, size_t count, int32_t* count_slot,
                                   int32_t next_count) {
  const size_t first = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (first == 0) *count_slot = next_count;
  for (size_t i = first; i < count; i += size_t{gridDim.x} * blockDim.x)
    AdamElement(scalars, grad[i], &params[i], &mu[i], &nu[i]);
}

}  // namespace

Status AdamUpdateOnDevice(const AdamScalars& scalars, const float* grad, float* params, float* mu,
                          float* nu, size_t count, int32_t* count_slot, int32_t next_count,
                          cudaStream_t stream) {
  if (count < 1) return Status::Error(kInternal, "AdamUpdateOnDevice: empty state");
  adam_update_kernel<<<GridBlocks(count), kThreadsPerBlock, 0, stream>>>(
      scalars, grad, params, mu, nu, count, count_slot, next_count);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
