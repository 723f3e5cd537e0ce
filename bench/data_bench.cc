// data_bench: what generating the training data and the initial parameters
// costs on the CPU, on one thread, at train_bench.py's configuration (FEATURES=512
// WIDTH=1024 LAYERS=3 CLASSES=10 BATCH=512): one update's batch is 512 samples
// of 512 jax normals (262,144) and 512 randint labels. It prints
//
//   data_bench samples=512 features=512 rounds=R batch_ms=M (min A, max B) ns_per_normal=N
//   data_bench init_ms=M parameters=P
//
// batch_ms is the median round. The budget of the data generation is 3 % of one update's
// time at that configuration, which bench/train_bench.py measures; on the CPU
// platform the batch is also split over the BLAS threads (cpu_parallel.h), so
// the figure here is the single-thread cost, an upper bound. Not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/state_layout.h"
#include "trainer/math/data.h"
#include "trainer/math/init.h"

namespace dmlp {
namespace {

using Clock = std::chrono::steady_clock;

double Milliseconds(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int Run(int rounds) {
  const SampleSpec spec{42, 512, 10};
  const int64_t batch = 512;
  std::vector<float> inputs(batch * spec.features);
  std::vector<int32_t> labels(batch);
  std::vector<double> times;
  for (int round = 0; round < rounds; ++round) {
    const Clock::time_point start = Clock::now();
    GenerateSamples(spec, 1 + round, round % 8, 0, batch, inputs.data(), labels.data());
    times.push_back(Milliseconds(start));
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("data_bench samples=%lld features=%lld rounds=%d batch_ms=%.3f (min %.3f, max %.3f) "
              "ns_per_normal=%.2f\n",
              static_cast<long long>(batch), static_cast<long long>(spec.features), rounds, median,
              times.front(), times.back(), median * 1e6 / double(batch * spec.features));
  Result<StateLayout> layout = StateLayout::Create({512, 1024, 3, 10});
  if (!layout.ok()) return 1;
  std::vector<float> params(layout->parameter_count());
  const Clock::time_point start = Clock::now();
  if (!InitParams(*layout, 42, params.data()).ok()) return 1;
  std::printf("data_bench init_ms=%.1f parameters=%zu\n", Milliseconds(start), params.size());
  return 0;
}

}  // namespace
}  // namespace dmlp

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 50;
  if (rounds < 1) {
    std::fprintf(stderr, "usage: data_bench [ROUNDS >= 1]\n");
    return 2;
  }
  return dmlp::Run(rounds);
}
