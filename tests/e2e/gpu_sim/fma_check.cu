// The simulator's float arithmetic, bit for bit against this host's:
//   1. 4,096 chains of 64 __fmaf_rn (fma.rn.f32) against std::fmaf chains;
//      the same chains unfused differ in most threads, so a simulator that
//      rounds twice (a*b then +c) fails here;
//   2. a*b+acc as written, which nvcc contracts into the same fma;
//   3. add.rn, mul.rn, div.rn and sqrt.rn (IEEE, correctly rounded on a GPU
//      and on the host alike) and abs over every pair of special values: +-0,
//      denormals, the normal extremes, +-inf and NaN, and over 4,096 random pairs;
//   4. the same in double, what ExpF/LogF (trainer/math/exp_log.h) run on:
//      fma.rn.f64, mul.rn, add.rn, sub.rn, the conversions f32 <-> f64 and
//      f64 -> s64/u64 (round to nearest even), s32 -> f64, and the bit
//      reinterpretations, over special triples, random triples and triples
//      whose fma cancels (c = -(a*b) rounded: the fma's exact low part).
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

constexpr int kOps64 = 10;
const char* const kOpNames64[kOps64] = {"fma.rn.f64", "mul.rn.f64", "add.rn.f64", "sub.rn.f64",
                                        "cvt.f64.f32", "cvt.rn.f32.f64", "cvt.rni.s64.f64",
                                        "cvt.rni.u64.f64", "cvt.rn.f64.s32", "mov.b64"};

// One triple's inputs: a, b, c in double; x a float; k an int; `integral` a
// double in range of both int64 and uint64 (the conversions' results are only
// defined there).
struct Triple {
  double a, b, c;
  float x;
  int k;
  double integral;
};

// out holds kOps64 rows of n results as 64-bit patterns, in kOpNames64's order.
__global__ void ieee_ops64_kernel(const Triple* in, uint64_t* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const Triple v = in[t];
  out[0 * n + t] = __double_as_longlong(__fma_rn(v.a, v.b, v.c));
  out[1 * n + t] = __double_as_longlong(__dmul_rn(v.a, v.b));
  out[2 * n + t] = __double_as_longlong(__dadd_rn(v.a, v.b));
  out[3 * n + t] = __double_as_longlong(__dsub_rn(v.a, v.b));
  out[4 * n + t] = __double_as_longlong(static_cast<double>(v.x));
  out[5 * n + t] = __float_as_uint(__double2float_rn(v.a));
  out[6 * n + t] = static_cast<uint64_t>(__double2ll_rn(v.integral));
  out[7 * n + t] = __double2ull_rn(fabs(v.integral));
  out[8 * n + t] = __double_as_longlong(static_cast<double>(v.k));
  // The reinterpretations both ways, through an integer operation on the bits.
  out[9 * n + t] = __double_as_longlong(__longlong_as_double(__double_as_longlong(v.a) + 1));
}

uint64_t bits_of64(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

double from_bits64(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// What this host gives for op `op` of kOpNames64, as a 64-bit pattern.
uint64_t host_op64(int op, const Triple& v) {
  switch (op) {
    case 0: return bits_of64(std::fma(v.a, v.b, v.c));
    case 1: return bits_of64(v.a * v.b);
    case 2: return bits_of64(v.a + v.b);
    case 3: return bits_of64(v.a - v.b);
    case 4: return bits_of64(static_cast<double>(v.x));
    case 5: return bits_of(static_cast<float>(v.a));
    case 6: return static_cast<uint64_t>(std::llrint(v.integral));
    case 7: return static_cast<uint64_t>(std::nearbyint(std::fabs(v.integral)));
    case 8: return bits_of64(static_cast<double>(v.k));
    default: return bits_of64(v.a) + 1;
  }
}

// Equal bits, or both NaN (as same_result, for the ops whose result is a double).
bool same_result64(int op, uint64_t device, uint64_t host) {
  if (op >= 6 && op != 8) return device == host;  // integers, or bits (mov.b64)
  if (op == 5) return same_result(from_bits(static_cast<uint32_t>(device)), from_bits(static_cast<uint32_t>(host)));
  const double d = from_bits64(device), h = from_bits64(host);
  if (std::isnan(d) || std::isnan(h)) return std::isnan(d) && std::isnan(h);
  return device == host;
}

double random_double() {  // xorshift64, a random sign, mantissa and exponent in [2^-60, 2^60)
  random_state ^= random_state << 13;
  random_state ^= random_state >> 7;
  random_state ^= random_state << 17;
  const uint64_t sign = random_state >> 63, exponent = 1023 - 60 + (random_state >> 40) % 120;
  return from_bits64((sign << 63) | (exponent << 52) | (random_state & 0xfffffffffffffull));
}

std::vector<double> special_doubles() {
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0, -0.0, from_bits64(1), from_bits64(0x8000000000000001ull),   // smallest denormals
          from_bits64(0x000fffffffffffffull),                              // largest denormal
          std::numeric_limits<double>::min(), std::numeric_limits<double>::max(),
          -std::numeric_limits<double>::max(), 1.0, -1.0, 0.5, 2.5, -2.5, 3.5,
          1.0 / 3.0, 0x1.8p+52, 0x1.71547652b82fep+5, 0x1p-1074 * 3, 1e300, 1e-300,
          0x1.fffffffp127,           // rounds to FLT_MAX or inf as a float
          0x1.0000003p-149,          // rounds to a float denormal
          0x1.ffffffep-127,          // a float denormal's halfway case
          inf, -inf, std::numeric_limits<double>::quiet_NaN()};
}

// A double in (-2^62, 2^62) with its fraction, past 2^31 every other time:
// round-to-nearest-even cases (x.5) every fourth time.
double random_integral() {
  const double value = std::ldexp(random_double(), (random_state & 4) != 0 ? 2 : -30);
  return (random_state & 3) == 0 ? std::floor(value) + 0.5 : value;
}

int check_ieee_ops64(const char* set_name, const std::vector<Triple>& in) {
  const int n = static_cast<int>(in.size());
  Triple* device_in = nullptr;
  uint64_t* device_out = nullptr;
  CUDA_OR_EXIT(cudaMalloc(&device_in, n * sizeof(Triple)));
  CUDA_OR_EXIT(cudaMemcpy(device_in, in.data(), n * sizeof(Triple), cudaMemcpyHostToDevice));
  CUDA_OR_EXIT(cudaMalloc(&device_out, kOps64 * n * sizeof(uint64_t)));
  ieee_ops64_kernel<<<blocks_for(n), kBlock>>>(device_in, device_out, n);
  CUDA_OR_EXIT(cudaGetLastError());
  std::vector<uint64_t> out(kOps64 * n);
  CUDA_OR_EXIT(cudaMemcpy(out.data(), device_out, out.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  int failures = 0;
  for (int op = 0; op < kOps64; ++op) {
    int mismatches = 0, first = -1;
    for (int t = 0; t < n; ++t) {
      if (!same_result64(op, out[op * n + t], host_op64(op, in[t]))) {
        ++mismatches;
        if (first < 0) first = t;
      }
    }
    std::printf("fma_check: %-15s %-16s %d/%d mismatches\n", kOpNames64[op], set_name, mismatches, n);
    if (first >= 0) {
      std::printf("fma_check:   e.g. a=%a b=%a c=%a: simulator %016llx, host %016llx\n", in[first].a,
                  in[first].b, in[first].c, static_cast<unsigned long long>(out[op * n + first]),
                  static_cast<unsigned long long>(host_op64(op, in[first])));
    }
    failures += mismatches != 0;
  }
  CUDA_OR_EXIT(cudaFree(device_in));
  CUDA_OR_EXIT(cudaFree(device_out));
  return failures;
}

int check_double_ops() {
  const std::vector<double> specials = special_doubles();
  const std::vector<float> float_specials = special_values();
  std::vector<Triple> triples;
  size_t i = 0;
  for (double a : specials)
    for (double b : specials) {
      const double c = specials[(i * 7) % specials.size()];
      triples.push_back({a, b, c, float_specials[i % float_specials.size()],
                         static_cast<int>(i * 2654435761u), std::isfinite(c) && std::fabs(c) < 0x1p62 ? c : 2.5});
      ++i;
    }
  int failures = check_ieee_ops64("special triples", triples);
  triples.clear();
  for (int t = 0; t < kChains; ++t) {
    const double a = random_double(), b = random_double();
    // Every other triple cancels: c = -(a*b) rounded leaves the product's low part.
    const double c = t % 2 == 0 ? -(a * b) : random_double();
    triples.push_back({a, b, c, random_float() * 1e-38f, static_cast<int>(random_state),
                       random_integral()});
  }
  failures += check_ieee_ops64("random triples", triples);
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
  failures += check_double_ops();

  std::printf("fma_check: RESULT %s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
