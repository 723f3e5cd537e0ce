// The simulator's float arithmetic, bit for bit against this host's:
//   1. 4,096 chains of 64 __fmaf_rn (fma.rn.f32) against std::fmaf chains;
//      the same chains unfused differ in most threads, so a simulator that
//      rounds twice (a*b then +c) fails here;
//   2. a*b+acc as written, which nvcc contracts into the same fma;
//   3. add.rn, mul.rn, div.rn and sqrt.rn (IEEE, correctly rounded on a GPU
//      and on the host alike) and abs over every pair of special values: +-0,
//      denormals, the normal extremes, +-inf and NaN, and over 4,096 random pairs.
// Built by tools/gpu-sim.sh nvcc and run under tools/gpu-sim.sh run
// (e2e.gpu_sim.fma_bits). Prints one line per check, each starting
// "fma_check: " (the simulator prints much else), and "fma_check: RESULT PASS|FAIL";
// exit 0 when every check passed, 1 when one failed, 2 on a CUDA error.
// It also prints how long the chain kernel took, for docs/gpus.md's figure of
// simulated FMAs per second (a figure, not a check).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "cuda_or_exit.h"

namespace {

constexpr int kChainLength = 64;
constexpr int kChains = 4096;
constexpr int kBlock = 128;

__global__ void fma_chain_kernel(const float* a, const float* b, float* out, int chains) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= chains) return;
  float acc = 0.0f;
  for (int k = 0; k < kChainLength; ++k) acc = __fmaf_rn(a[t * kChainLength + k], b[t * kChainLength + k], acc);
  out[t] = acc;
}

// Written unfused; nvcc's default --fmad=true contracts it into fma.rn.f32.
__global__ void contracted_chain_kernel(const float* a, const float* b, float* out, int chains) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= chains) return;
  float acc = 0.0f;
  for (int k = 0; k < kChainLength; ++k) acc = a[t * kChainLength + k] * b[t * kChainLength + k] + acc;
  out[t] = acc;
}

constexpr int kOps = 5;
const char* const kOpNames[kOps] = {"add.rn", "mul.rn", "div.rn", "sqrt.rn", "abs"};

// out holds kOps rows of n results, in kOpNames' order.
__global__ void ieee_ops_kernel(const float* x, const float* y, float* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  out[0 * n + t] = __fadd_rn(x[t], y[t]);
  out[1 * n + t] = __fmul_rn(x[t], y[t]);
  out[2 * n + t] = __fdiv_rn(x[t], y[t]);
  out[3 * n + t] = __fsqrt_rn(x[t]);  // NaN for x < 0, -0 for -0, as IEEE says
  out[4 * n + t] = fabsf(x[t]);       // abs.f32: clears the sign bit, -0 included
}

// What IEEE 754 gives on this host for op `op` of kOpNames.
float host_op(int op, float x, float y) {
  switch (op) {
    case 0: return x + y;
    case 1: return x * y;
    case 2: return x / y;
    case 3: return std::sqrt(x);
    default: return std::fabs(x);
  }
}

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Equal bits, or both NaN: a GPU returns the canonical NaN (0x7fffffff) where
// x86 keeps an operand's payload, and IEEE leaves the payload open.
bool same_result(float device, float host) {
  if (std::isnan(device) || std::isnan(host)) return std::isnan(device) && std::isnan(host);
  return bits_of(device) == bits_of(host);
}

float from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint64_t random_state = 88172645463325252ull;
float random_float() {  // xorshift64, uniform in [-4, 4)
  random_state ^= random_state << 13;
  random_state ^= random_state >> 7;
  random_state ^= random_state << 17;
  return (static_cast<float>((random_state >> 11) & 0xffffff) / 16777216.0f * 2.0f - 1.0f) * 4.0f;
}

std::vector<float> special_values() {
  const float inf = std::numeric_limits<float>::infinity();
  return {0.0f, -0.0f,
          from_bits(0x00000001), from_bits(0x80000001),   // smallest denormals
          from_bits(0x007fffff), from_bits(0x807fffff),   // largest denormals
          std::numeric_limits<float>::min(), -std::numeric_limits<float>::min(),
          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
          1.0f, -1.0f, 3.0f, 1.0f / 3.0f, 1.5e-30f, 2.5e30f,
          inf, -inf, std::numeric_limits<float>::quiet_NaN()};
}

float* to_device(const std::vector<float>& host) {
  float* device = nullptr;
  CUDA_OR_EXIT(cudaMalloc(&device, host.size() * sizeof(float)));
  CUDA_OR_EXIT(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return device;
}

std::vector<float> to_host(const float* device, size_t count) {
  std::vector<float> host(count);
  CUDA_OR_EXIT(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

int blocks_for(int n) { return (n + kBlock - 1) / kBlock; }

// Returns the number of mismatching threads of a chain kernel against `host`.
int check_chains(const char* name, const std::vector<float>& device, const std::vector<float>& host) {
  int mismatches = 0;
  for (int t = 0; t < kChains; ++t) mismatches += bits_of(device[t]) != bits_of(host[t]);
  std::printf("fma_check: %-22s %d/%d mismatches against the host's std::fmaf chain\n", name, mismatches, kChains);
  if (mismatches > 0) {
    std::printf("fma_check:   e.g. thread 0: simulator %08x, host %08x\n", bits_of(device[0]), bits_of(host[0]));
  }
  return mismatches;
}

int check_chain_kernels() {
  std::vector<float> a(kChains * kChainLength), b(kChains * kChainLength);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = random_float();
    b[i] = random_float();
  }
  std::vector<float> fused(kChains), unfused(kChains);
  int unfused_differs = 0;
  for (int t = 0; t < kChains; ++t) {
    float f = 0.0f, u = 0.0f;
    for (int k = 0; k < kChainLength; ++k) {
      f = std::fmaf(a[t * kChainLength + k], b[t * kChainLength + k], f);
      volatile float product = a[t * kChainLength + k] * b[t * kChainLength + k];  // rounded alone
      u = product + u;
    }
    fused[t] = f;
    unfused[t] = u;
    unfused_differs += bits_of(f) != bits_of(u);
  }
  std::printf("fma_check: host: fused and unfused chains differ in %d/%d threads (the test can tell them apart)\n",
              unfused_differs, kChains);
  float* device_a = to_device(a);
  float* device_b = to_device(b);
  float* device_out = nullptr;
  CUDA_OR_EXIT(cudaMalloc(&device_out, kChains * sizeof(float)));

  auto started = std::chrono::steady_clock::now();
  fma_chain_kernel<<<blocks_for(kChains), kBlock>>>(device_a, device_b, device_out, kChains);
  CUDA_OR_EXIT(cudaGetLastError());
  CUDA_OR_EXIT(cudaDeviceSynchronize());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("fma_check: speed: %d FMAs in %.3f s of simulation (%.2f million FMAs/s, with the chain's loads)\n",
              kChains * kChainLength, seconds, kChains * kChainLength / seconds / 1e6);
  int failures = check_chains("__fmaf_rn chain:", to_host(device_out, kChains), fused) != 0;

  contracted_chain_kernel<<<blocks_for(kChains), kBlock>>>(device_a, device_b, device_out, kChains);
  CUDA_OR_EXIT(cudaGetLastError());
  failures += check_chains("a*b+acc (contracted):", to_host(device_out, kChains), fused) != 0;
  CUDA_OR_EXIT(cudaFree(device_a));
  CUDA_OR_EXIT(cudaFree(device_b));
  CUDA_OR_EXIT(cudaFree(device_out));
  return failures;
}

int check_ieee_ops(const char* set_name, const std::vector<float>& x, const std::vector<float>& y) {
  const int n = static_cast<int>(x.size());
  float* device_x = to_device(x);
  float* device_y = to_device(y);
  float* device_out = nullptr;
  CUDA_OR_EXIT(cudaMalloc(&device_out, kOps * n * sizeof(float)));
  ieee_ops_kernel<<<blocks_for(n), kBlock>>>(device_x, device_y, device_out, n);
  CUDA_OR_EXIT(cudaGetLastError());
  std::vector<float> out = to_host(device_out, kOps * n);
  int failures = 0;
  for (int op = 0; op < kOps; ++op) {
    int mismatches = 0, first = -1;
    for (int t = 0; t < n; ++t) {
      if (!same_result(out[op * n + t], host_op(op, x[t], y[t]))) {
        ++mismatches;
        if (first < 0) first = t;
      }
    }
    std::printf("fma_check: %-8s %-15s %d/%d mismatches\n", kOpNames[op], set_name, mismatches, n);
    if (first >= 0) {
      std::printf("fma_check:   e.g. x=%a y=%a: simulator %a, host %a\n", x[first], y[first], out[op * n + first],
                  host_op(op, x[first], y[first]));
    }
    failures += mismatches != 0;
  }
  CUDA_OR_EXIT(cudaFree(device_x));
  CUDA_OR_EXIT(cudaFree(device_y));
  CUDA_OR_EXIT(cudaFree(device_out));
  return failures;
}

}  // namespace

int main() {
  int failures = check_chain_kernels();

  std::vector<float> specials = special_values(), x, y;
  for (float left : specials) {
    for (float right : specials) {
      x.push_back(left);
      y.push_back(right);
    }
  }
  failures += check_ieee_ops("special pairs", x, y);
  x.assign(kChains, 0.0f);
  y.assign(kChains, 0.0f);
  for (int t = 0; t < kChains; ++t) {
    x[t] = random_float();
    y[t] = random_float();
  }
  failures += check_ieee_ops("random pairs", x, y);

  std::printf("fma_check: RESULT %s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
