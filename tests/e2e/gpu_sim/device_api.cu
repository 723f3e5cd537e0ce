// The runtime calls dmlp's device description makes (trainer/cuda/device_select.cc),
// on the simulator: cudaGetDeviceProperties, cudaDeviceGetPCIBusId (the
// simulator as shipped aborted the program there), cudaDriverGetVersion,
// cudaRuntimeGetVersion, and an event pair around a kernel (elapsed time is
// the host's wall time of the simulation there: only its sign is checked).
// Built by tools/gpu-sim.sh nvcc and run under tools/gpu-sim.sh run
// (e2e.gpu_sim.device_api). Prints one line per call, each starting
// "device_api: ", and "device_api: RESULT PASS|FAIL"; exit 0 when every call
// succeeded with a plausible answer, 1 when one did not, 2 on a CUDA error.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_or_exit.h"

namespace {

__global__ void scale_kernel(float* values, int count) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < count) values[t] *= 2.0f;
}

// Returns 1 (a failure) and prints why when `ok` is false.
int expect(bool ok, const char* what) {
  if (!ok) std::printf("device_api: FAIL: %s\n", what);
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  int failures = 0;
  cudaDeviceProp properties{};
  CUDA_OR_EXIT(cudaGetDeviceProperties(&properties, 0));
  std::printf("device_api: properties: %s, sm_%d%d, %d SMs\n", properties.name, properties.major,
              properties.minor, properties.multiProcessorCount);
  failures += expect(properties.major == 7 && properties.minor == 0, "compute capability 7.0 (SM7_QV100)");

  char bus_id[32] = {};
  CUDA_OR_EXIT(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, 0));
  std::printf("device_api: PCI bus id: %s\n", bus_id);
  failures += expect(std::strlen(bus_id) == 12 && bus_id[4] == ':', "a bus id of the form 0000:00:00.0");

  int driver_version = 0, runtime_version = 0;
  CUDA_OR_EXIT(cudaDriverGetVersion(&driver_version));
  CUDA_OR_EXIT(cudaRuntimeGetVersion(&runtime_version));
  std::printf("device_api: driver version %d, runtime version %d\n", driver_version, runtime_version);
  failures += expect(runtime_version / 1000 == 11, "CUDA 11's runtime");

  const int count = 1024;
  float* values = nullptr;
  CUDA_OR_EXIT(cudaMalloc(&values, count * sizeof(float)));
  CUDA_OR_EXIT(cudaMemset(values, 0, count * sizeof(float)));
  cudaEvent_t start, stop;
  CUDA_OR_EXIT(cudaEventCreate(&start));
  CUDA_OR_EXIT(cudaEventCreate(&stop));
  CUDA_OR_EXIT(cudaEventRecord(start));
  scale_kernel<<<count / 128, 128>>>(values, count);
  CUDA_OR_EXIT(cudaGetLastError());
  CUDA_OR_EXIT(cudaEventRecord(stop));
  CUDA_OR_EXIT(cudaEventSynchronize(stop));
  float milliseconds = -1.0f;
  CUDA_OR_EXIT(cudaEventElapsedTime(&milliseconds, start, stop));
  std::printf("device_api: event pair around a kernel: %.3f ms (host time of the simulation)\n", milliseconds);
  failures += expect(milliseconds >= 0.0f, "a non-negative elapsed time");
  CUDA_OR_EXIT(cudaEventDestroy(start));
  CUDA_OR_EXIT(cudaEventDestroy(stop));
  CUDA_OR_EXIT(cudaFree(values));

  std::printf("device_api: RESULT %s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
