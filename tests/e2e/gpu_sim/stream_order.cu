// The order of work on a non-default stream, as the host sees it:
//   1. memset after kernel: a kernel writes 1.0f into a buffer on stream s,
//      cudaMemsetAsync zeroes it on s, cudaStreamSynchronize(s); the host must
//      read zeros (the simulator as shipped ran the memset at once, before the
//      queued kernel, which then left its ones);
//   2. synchronize waits: a kernel writes 7.0f on s, cudaMemcpyAsync copies the
//      buffer into pinned host memory on s, cudaStreamSynchronize(s); the host
//      must read sevens at once, with no other call between (the simulator as
//      shipped returned from the synchronize without waiting);
//   3. a strided copy after a kernel: a kernel writes 3.0f on s, then
//      cudaMemcpy2DAsync gathers 16-float rows at a pitch of 64 floats from
//      the buffer into pinned host rows at a pitch of 24 floats on s (as
//      dmlp's Gloo staging gathers a shard's slices); after the synchronize
//      the rows must hold threes and the gaps between them their -1s (the
//      simulator as shipped aborted: "not implemented").
// The kernels do some thousands of FMAs per thread first, so that queued work
// is still running when the host looks: an unordered simulator is caught, not
// lucky. Built by tools/gpu-sim.sh nvcc and run under tools/gpu-sim.sh run
// (e2e.gpu_sim.stream_order). Prints one line per check, each starting
// "stream_order: " (the simulator prints much else), and "stream_order: RESULT PASS|FAIL";
// exit 0 when all passed, 1 when one failed, 2 on a CUDA error.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_or_exit.h"

namespace {

constexpr int kCount = 1024;
constexpr int kBlock = 128;
constexpr int kBusyIterations = 2000;  // per thread: about 2 M simulated FMAs in all

// Writes `value` into out[t] after kBusyIterations FMAs that the result
// depends on (multiplying by zero keeps the value, not the work, exact).
__global__ void busy_fill_kernel(float* out, float value, int count) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= count) return;
  float acc = static_cast<float>(t);
  for (int i = 0; i < kBusyIterations; ++i) acc = fmaf(acc, 0.999f, 1.0f);
  out[t] = value + acc * 0.0f;
}

// Returns how many of `values` differ from `expected`.
int count_other_than(const float* values, float expected) {
  int others = 0;
  for (int i = 0; i < kCount; ++i) others += values[i] != expected;
  return others;
}

int check_memset_after_kernel(cudaStream_t stream, float* device) {
  busy_fill_kernel<<<kCount / kBlock, kBlock, 0, stream>>>(device, 1.0f, kCount);
  CUDA_OR_EXIT(cudaGetLastError());
  CUDA_OR_EXIT(cudaMemsetAsync(device, 0, kCount * sizeof(float), stream));
  CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  std::vector<float> host(kCount, -1.0f);
  CUDA_OR_EXIT(cudaMemcpy(host.data(), device, kCount * sizeof(float), cudaMemcpyDeviceToHost));
  int others = count_other_than(host.data(), 0.0f);
  std::printf("stream_order: memset after kernel on a stream: %d/%d values not zeroed (first %g)\n", others, kCount, host[0]);
  return others != 0;
}

int check_synchronize_waits(cudaStream_t stream, float* device) {
  float* pinned = nullptr;
  CUDA_OR_EXIT(cudaMallocHost(&pinned, kCount * sizeof(float)));
  for (int i = 0; i < kCount; ++i) pinned[i] = -1.0f;
  busy_fill_kernel<<<kCount / kBlock, kBlock, 0, stream>>>(device, 7.0f, kCount);
  CUDA_OR_EXIT(cudaGetLastError());
  CUDA_OR_EXIT(cudaMemcpyAsync(pinned, device, kCount * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  int others = count_other_than(pinned, 7.0f);  // read before any other CUDA call
  std::printf("stream_order: stream synchronize waits for a copy: %d/%d values not yet copied (first %g)\n", others, kCount,
              pinned[0]);
  CUDA_OR_EXIT(cudaDeviceSynchronize());  // the copy may still be in flight when it failed
  CUDA_OR_EXIT(cudaFreeHost(pinned));
  return others != 0;
}

int check_strided_copy(cudaStream_t stream, float* device) {
  constexpr int kWidth = 16, kSourcePitch = 64, kDestinationPitch = 24;
  constexpr int kRows = kCount / kSourcePitch;
  float* pinned = nullptr;
  CUDA_OR_EXIT(cudaMallocHost(&pinned, kRows * kDestinationPitch * sizeof(float)));
  for (int i = 0; i < kRows * kDestinationPitch; ++i) pinned[i] = -1.0f;
  busy_fill_kernel<<<kCount / kBlock, kBlock, 0, stream>>>(device, 3.0f, kCount);
  CUDA_OR_EXIT(cudaGetLastError());
  CUDA_OR_EXIT(cudaMemcpy2DAsync(pinned, kDestinationPitch * sizeof(float), device,
                                 kSourcePitch * sizeof(float), kWidth * sizeof(float), kRows,
                                 cudaMemcpyDeviceToHost, stream));
  CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  int wrong = 0;
  for (int row = 0; row < kRows; ++row) {
    for (int col = 0; col < kDestinationPitch; ++col) {
      wrong += pinned[row * kDestinationPitch + col] != (col < kWidth ? 3.0f : -1.0f);
    }
  }
  std::printf("stream_order: strided copy after a kernel on a stream: %d/%d values wrong\n", wrong,
              kRows * kDestinationPitch);
  CUDA_OR_EXIT(cudaFreeHost(pinned));
  return wrong != 0;
}

}  // namespace

int main() {
  cudaStream_t stream;
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* device = nullptr;
  CUDA_OR_EXIT(cudaMalloc(&device, kCount * sizeof(float)));
  int failures = check_memset_after_kernel(stream, device);
  failures += check_synchronize_waits(stream, device);
  failures += check_strided_copy(stream, device);
  CUDA_OR_EXIT(cudaFree(device));
  CUDA_OR_EXIT(cudaStreamDestroy(stream));
  std::printf("stream_order: RESULT %s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
