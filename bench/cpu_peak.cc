// cpu_peak: the machine's float32 FMA roof — what no GEMM, however tuned, can
// exceed. THREADS threads each run independent chains of fused multiply-adds
// on full vectors (AVX-512 where the CPU has it, else AVX2+FMA, else scalar
// FMA), long enough to keep every FMA unit busy; FLOPs = 2 per lane per FMA.
//
//   cpu_peak THREADS [SECONDS [ISA]]    ISA: avx512, avx2 or scalar (default: the widest this CPU has)
//
// Prints `fma_peak_gflops=R threads=T isa=NAME fma_median_gflops=M` (the best
// of 5 runs, and their median: on a shared machine the two differ, and a
// median GEMM rate compares fairly with the median).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 12;  // > latency x FMA units (4 x 2): the units never wait
constexpr long kInner = 1 << 16;

// Returns the lane sum so the compiler cannot drop the work; `rounds` x kInner
// x kChains FMAs of `lanes` lanes each.
__attribute__((target("avx512f"))) float ChainsAvx512(long rounds) {
  __m512 acc[kChains];
  const __m512 scale = _mm512_set1_ps(0.999999f), shift = _mm512_set1_ps(1e-7f);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c));
  for (long r = 0; r < rounds * kInner; ++r) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], scale, shift);
  }
  float lanes[16], sum = 0;  // not _mm512_reduce_add_ps: GCC 12 warns inside it
  for (int c = 0; c < kChains; ++c) {
    _mm512_storeu_ps(lanes, acc[c]);
    for (float lane : lanes) sum += lane;
  }
  return sum;
}

__attribute__((target("avx2,fma"))) float ChainsAvx2(long rounds) {
  __m256 acc[kChains];
  const __m256 scale = _mm256_set1_ps(0.999999f), shift = _mm256_set1_ps(1e-7f);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(float(c));
  for (long r = 0; r < rounds * kInner; ++r) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], scale, shift);
  }
  float lanes[8], sum = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm256_storeu_ps(lanes, acc[c]);
    for (float lane : lanes) sum += lane;
  }
  return sum;
}

float ChainsScalar(long rounds) {
  float acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = float(c);
  for (long r = 0; r < rounds * kInner; ++r)
    for (int c = 0; c < kChains; ++c) acc[c] = std::fma(acc[c], 0.999999f, 1e-7f);
  float sum = 0;
  for (float value : acc) sum += value;
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::atoi(argv[1]) < 1) {
    std::fprintf(stderr, "usage: cpu_peak THREADS [SECONDS [avx512|avx2|scalar]]\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.3;
  __builtin_cpu_init();
  bool avx512 = __builtin_cpu_supports("avx512f");
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (argc > 3) {  // a narrower ISA than the CPU's widest, to hold a kernel of that ISA against
    const std::string wanted = argv[3];
    if ((wanted == "avx512" && !avx512) || (wanted == "avx2" && !avx2) ||
        (wanted != "avx512" && wanted != "avx2" && wanted != "scalar")) {
      std::fprintf(stderr, "cpu_peak: this CPU cannot run %s\n", argv[3]);
      return 2;
    }
    avx512 = wanted == "avx512";
    avx2 = avx512 || wanted == "avx2";
  }
  const int lanes = avx512 ? 16 : avx2 ? 8 : 1;
  auto chains = avx512 ? ChainsAvx512 : avx2 ? ChainsAvx2 : ChainsScalar;

  // Calibrate the rounds for about `seconds` on one thread, then time all threads together.
  long rounds = 1;
  for (;;) {
    auto start = std::chrono::steady_clock::now();
    volatile float sink = chains(rounds);
    (void)sink;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds / 4)
      break;
    rounds *= 2;
  }
  std::vector<double> rates;
  for (int run = 0; run < 5; ++run) {
    std::vector<std::thread> workers;
    std::atomic<float> sink{0};
    auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) workers.emplace_back([&] { sink.store(chains(rounds)); });
    for (std::thread& worker : workers) worker.join();
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double flops = 2.0 * lanes * kChains * double(kInner) * double(rounds) * threads;
    rates.push_back(flops / spent / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("fma_peak_gflops=%.1f threads=%d isa=%s fma_median_gflops=%.1f\n", rates.back(), threads,
              avx512 ? "avx512" : avx2 ? "avx2" : "scalar", rates[rates.size() / 2]);
  return 0;
}
