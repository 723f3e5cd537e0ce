// cpu_floor: the CPU platform's floor for one optimizer update — the MLP's
// GEMMs for one update (forward, weight gradients, input gradients of every
// shard this rank computes), run back to back through the pinned CPU GEMM.
//
//   cpu_floor FEATURES WIDTH LAYERS CLASSES SAMPLES_PER_RANK THREADS [REPEATS]
//
// Prints `gemm_flops_per_update=F gemm_gflops=R floor_update_s=T` (medians).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "trainer/gemm_cpu.h"

namespace {

struct Gemm {
  bool ta, tb;
  int m, n, k;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: cpu_floor FEATURES WIDTH LAYERS CLASSES SAMPLES THREADS [REPEATS]\n");
    return 2;
  }
  const int features = std::atoi(argv[1]), width = std::atoi(argv[2]), layers = std::atoi(argv[3]);
  const int classes = std::atoi(argv[4]), samples = std::atoi(argv[5]), threads = std::atoi(argv[6]);
  const int repeats = argc > 7 ? std::atoi(argv[7]) : 5;
  dmlp::Status status = dmlp::InitCpuGemm(threads);
  if (!status.ok()) {
    std::fprintf(stderr, "cpu_floor: error: %s\n", status.ToString().c_str());
    return 1;
  }
  std::vector<Gemm> gemms;
  double flops = 0;
  for (int layer = 0; layer <= layers; ++layer) {
    const int in = layer == 0 ? features : width, out = layer == layers ? classes : width;
    gemms.push_back({false, false, samples, out, in});   // forward: X[n x in] W[in x out]
    gemms.push_back({true, false, in, out, samples});    // dW = X^T dY
    if (layer > 0) gemms.push_back({false, true, samples, in, out});  // dX = dY W^T
  }
  size_t largest = 0;
  for (const Gemm& g : gemms) {
    flops += 2.0 * g.m * g.n * g.k;
    largest = std::max({largest, size_t(g.m) * g.k, size_t(g.k) * g.n, size_t(g.m) * g.n});
  }
  std::vector<float> a(largest, 0.5f), b(largest, 0.25f), c(largest, 0.0f);
  std::vector<double> seconds;
  for (int repeat = 0; repeat <= repeats; ++repeat) {  // the first pass warms up
    auto start = std::chrono::steady_clock::now();
    for (const Gemm& g : gemms) {
      dmlp::Sgemm(g.ta, g.tb, g.m, g.n, g.k, 1.0f, a.data(), g.ta ? g.m : g.k, b.data(),
                  g.tb ? g.k : g.n, 0.0f, c.data(), g.n);
    }
    double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (repeat > 0) seconds.push_back(spent);
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf("gemm_flops_per_update=%.0f gemm_gflops=%.2f floor_update_s=%.6f\n", flops,
              flops / median / 1e9, median);
  return 0;
}
