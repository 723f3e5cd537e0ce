// adam_bench: what one optimizer update costs on the CPU platform, against
// the memory traffic it cannot avoid: AdamUpdate (trainer/cpu/adam_cpu.h) over
// issue 4's 2,634,762 parameters (FEATURES=512 WIDTH=1024 LAYERS=3 CLASSES=10)
// on the rank's threads (ParallelRanges, as the trainer runs it), interleaved
// round by round with a plain loop over the same seven streams (read the
// gradient, parameters, mu and nu; write the last three) on the same threads.
//
//   adam_bench [THREADS [PARAMETERS [ROUNDS]]]
//
// Prints `adam_bench threads=T parameters=P adam_ms=A streams_ms=S ratio=R adam_gbps=G`
// (medians of the rounds; R = A / S: how far Adam is from its bytes). Not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
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
  if (threads < 1 || parameters < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: adam_bench [THREADS [PARAMETERS [ROUNDS]]]\n");
    return 2;
  }
  dmlp::SetCpuParallelThreads(threads);
  const size_t n = static_cast<size_t>(parameters);
  std::vector<float> grad(n, 1e-3f), params(n, 0.5f), mu(n, 0.0f), nu(n, 0.0f);
  constexpr size_t kGrain = 4096;  // the trainer's element grain (backend_cpu.cc)
  std::vector<double> adam, streams;
  for (int round = 0; round < rounds; ++round) {
    const dmlp::AdamScalars scalars = dmlp::MakeAdamScalars(round + 1, 1e-3);
    Clock::time_point start = Clock::now();
    dmlp::ParallelRanges(n, kGrain, [&](size_t first, size_t last) {
      dmlp::AdamUpdate(scalars, grad.data() + first, params.data() + first, mu.data() + first,
                       nu.data() + first, last - first);
    });
    adam.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    // The same bytes: mu' = mu + g, nu' = nu + g, p' = p + mu' + nu' (adds only).
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
  std::printf("adam_bench threads=%d parameters=%ld adam_ms=%.3f streams_ms=%.3f ratio=%.2f adam_gbps=%.1f\n",
              threads, parameters, adam_ms, streams_ms, adam_ms / streams_ms,
              7.0 * sizeof(float) * n / (adam_ms * 1e-3) / 1e9);
  return 0;
}
