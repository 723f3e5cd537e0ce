// How fast the GPU simulator executes FMAs (docs/gpus.md, "The CUDA platform
// without a GPU"). One kernel of THREADS threads, each a chain of CHAIN
// dependent fmaf in registers (no memory traffic but one store), timed around
// launch + cudaDeviceSynchronize; prints FMAs per second of wall time.
// Not built by CMake (it needs CUDA 11.8's nvcc and the simulator):
//   tools/gpu-sim.sh nvcc -cudart shared -arch=sm_70 -O3 -o /tmp/fma_rate bench/gpu_sim/fma_rate.cu
//   tools/gpu-sim.sh run -- /tmp/fma_rate [THREADS [CHAIN]]   (default 4096 4096)
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

__global__ void fma_rate_kernel(float* out, int chain) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = static_cast<float>(t);
  for (int i = 0; i < chain; ++i) acc = fmaf(acc, 0.999f, 1.0f);
  out[t] = acc;
}

// Strict positive integer, or exit 2.
int parse_count(const char* text) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != 0 || value <= 0 || value > (1 << 24)) {
    std::fprintf(stderr, "fma_rate: not a count in 1..16777216: %s\n", text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? parse_count(argv[1]) : 4096;
  const int chain = argc > 2 ? parse_count(argv[2]) : 4096;
  const int block = 128;
  if (threads % block != 0) {
    std::fprintf(stderr, "fma_rate: THREADS must be a multiple of %d\n", block);
    return 2;
  }
  float* out = nullptr;
  if (cudaMalloc(&out, threads * sizeof(float)) != cudaSuccess) return 2;
  auto started = std::chrono::steady_clock::now();
  fma_rate_kernel<<<threads / block, block>>>(out, chain);
  if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) return 2;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  double fmas = static_cast<double>(threads) * chain;
  std::printf("fma_rate: %.0f FMAs in %.2f s: %.2f million FMAs/s\n", fmas, seconds, fmas / seconds / 1e6);
  cudaFree(out);
  return 0;
}
