// adam_bench: what one optimizer update costs on the CPU platform, against
// the memory traffic it cannot avoid: AdamUpdate (trainer/cpu/adam_cpu.h) over
// train_bench.py's 2,634,762 parameters (FEATURES=512 WIDTH=1024 LAYERS=3 CLASSES=10)
// on the rank's threads (ParallelRanges, as the trainer runs it), interleaved
// round by round with a plain loop over the same seven streams (read the
// gradient, parameters, mu and nu; write the last three) on the same threads.
//
//   adam_bench [THREADS [PARAMETERS [ROUNDS [EVICT_MB]]]]
//
// EVICT_MB > 0 writes and reads that many MB of other memory before each timed
// pass, so that the state starts as cold as in the job, where an update's
// data, activations, packed operands and the digest's reads (tens of MB) pass
// through the caches between two Adam steps; 0 (the default) leaves it hot.
//
// Prints `adam_bench threads=T parameters=P evict_mb=E adam_ms=A streams_ms=S ratio=R adam_gbps=G`
// (medians of the rounds; R = A / S: how far Adam is from its bytes). Not a test.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>

#include "bench/median.h"
#include "trainer/cpu/adam_cpu.h"
#include "trainer/cpu/cpu_parallel.h"
#include "trainer/math/adam.h"

namespace {

using Clock = std::chrono::steady_clock;

using dmlp::bench::Median;

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const long parameters = argc > 2 ? std::atol(argv[2]) : 2634762;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 30;
  const long evict_mb = argc > 4 ? std::atol(argv[4]) : 0;
  if (threads < 1 || parameters < 1 || rounds < 1 || evict_mb < 0) {
    std::fprintf(stderr, "usage: adam_bench [THREADS [PARAMETERS [ROUNDS [EVICT_MB]]]]\n");
    return 2;
  }
  std::vector<uint8_t> other(static_cast<size_t>(evict_mb) << 20);
  volatile uint8_t sink = 0;
  auto evict = [&other, &sink] {  // other memory through the caches, written and read
    if (other.empty()) return;
    std::memset(other.data(), static_cast<int>(sink) + 1, other.size());
    uint8_t sum = 0;
    for (size_t i = 0; i < other.size(); i += 64) sum = static_cast<uint8_t>(sum + other[i]);
    sink = sum;
  };
  dmlp::SetCpuParallelThreads(threads);
  const size_t n = static_cast<size_t>(parameters);
  std::vector<float> grad(n, 1e-3f), params(n, 0.5f), mu(n, 0.0f), nu(n, 0.0f);
  constexpr size_t kGrain = 4096;  // the trainer's element grain (backend_cpu.cc)
  std::vector<double> adam, streams;
  for (int round = 0; round < rounds; ++round) {
    const dmlp::AdamScalars scalars = dmlp::MakeAdamScalars(round + 1, 1e-3);
    evict();
    Clock::time_point start = Clock::now();
    dmlp::ParallelRanges(n, kGrain, [&](size_t first, size_t last) {
      dmlp::AdamUpdate(scalars, grad.data() + first, params.data() + first, mu.data() + first,
                       nu.data() + first, last - first);
    });
    adam.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    // The same bytes: mu' = mu + g, nu' = nu + g, p' = p + mu' + nu' (adds only).
    evict();
    start = Clock::now();
    dmlp::ParallelRanges(n, kGrain, [&](size_t first, size_t last) {
      for (size_t i = first; i < last; ++i) {
        const float m = mu[i] + grad[i], v = nu[i] + grad[i];
        mu[i] = m, nu[i] = v, params[i] = params[i] + m + v;
      }
    });
    streams.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  const double adam_ms = Median(adam), streams_ms = Median(streams);
  std::printf("adam_bench threads=%d parameters=%ld evict_mb=%ld adam_ms=%.3f streams_ms=%.3f ratio=%.2f "
              "adam_gbps=%.1f\n",
              threads, parameters, evict_mb, adam_ms, streams_ms, adam_ms / streams_ms,
              7.0 * sizeof(float) * n / (adam_ms * 1e-3) / 1e9);
  return 0;
}
