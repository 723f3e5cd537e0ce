// cpu_floor: the CPU platform's floor for one optimizer update — the MLP's
// GEMMs for one update (forward, weight gradients, input gradients of every
// shard this rank computes), run back to back through the CPU GEMM that
// DMLP_CPU_GEMM selects (auto, avx512, avx2, scalar or blis; default auto).
//
//   cpu_floor FEATURES WIDTH LAYERS CLASSES SAMPLES_PER_RANK THREADS [REPEATS]
//
// Then, interleaved with those passes so that outside load hits both alike,
// the same rank's real forward/backward (CpuMlp::ShardGradient: the GEMMs plus
// the element-wise passes, on distinct weight and activation buffers):
// the gap between the two is what the MLP spends beyond its GEMM floor.
//
// Prints `gemm_flops_per_update=F gemm_gflops=R floor_update_s=T mlp_update_s=M gemm=K`
// (medians over REPEATS passes; K: the kernel that ran), and on stderr each
// GEMM's shape and rate (`gemm ta=0 tb=0 m=512 n=1024 k=512 gflops=R`, median
// per shape): where the floor's time goes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/median.h"
#include "trainer/cpu/gemm_cpu.h"
#include "trainer/cpu/mlp_cpu.h"

namespace {

struct Gemm {
  bool ta, tb;
  int m, n, k;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

using dmlp::bench::Median;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: cpu_floor FEATURES WIDTH LAYERS CLASSES SAMPLES THREADS [REPEATS]\n");
    return 2;
  }
  const int features = std::atoi(argv[1]), width = std::atoi(argv[2]), layers = std::atoi(argv[3]);
  const int classes = std::atoi(argv[4]), samples = std::atoi(argv[5]), threads = std::atoi(argv[6]);
  const int repeats = argc > 7 ? std::atoi(argv[7]) : 5;
  const char* choice_text = std::getenv("DMLP_CPU_GEMM");
  dmlp::Result<dmlp::CpuGemm> choice = dmlp::ParseCpuGemm(choice_text ? choice_text : "auto");
  if (!choice.ok()) {
    std::fprintf(stderr, "cpu_floor: error: %s\n", choice.status().ToString().c_str());
    return 2;
  }
  dmlp::Status status = dmlp::InitCpuGemm(threads, choice.value());
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

  const dmlp::ModelShape shape{features, width, layers, classes};
  dmlp::Result<dmlp::StateLayout> layout = dmlp::StateLayout::Create(shape);
  if (!layout.ok()) {
    std::fprintf(stderr, "cpu_floor: error: %s\n", layout.status().ToString().c_str());
    return 1;
  }
  dmlp::Result<dmlp::CpuMlp> mlp = dmlp::CpuMlp::Create(layout.value(), samples);
  if (!mlp.ok()) {
    std::fprintf(stderr, "cpu_floor: error: %s\n", mlp.status().ToString().c_str());
    return 1;
  }
  // Small deterministic values: the time does not depend on them (no NaN or
  // denormal paths are reached), only on the shapes.
  const size_t parameters = static_cast<size_t>(layout.value().parameter_count());
  std::vector<float> params(parameters), grad(parameters);
  for (size_t i = 0; i < parameters; ++i) params[i] = float((i * 2654435761u) % 1000) / 32000.0f - 0.015f;
  std::vector<float> inputs(static_cast<size_t>(samples) * features);
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = float((i * 40503u) % 1000) / 500.0f - 1.0f;
  std::vector<int32_t> labels(static_cast<size_t>(samples));
  for (int i = 0; i < samples; ++i) labels[i] = i % classes;

  std::vector<double> gemm_seconds, mlp_seconds;
  std::vector<std::vector<double>> shape_seconds(gemms.size());
  for (int repeat = 0; repeat <= repeats; ++repeat) {  // the first pass warms up
    double gemm_spent = 0;
    for (size_t i = 0; i < gemms.size(); ++i) {
      const Gemm& g = gemms[i];
      const auto start = std::chrono::steady_clock::now();
      dmlp::Sgemm(g.ta, g.tb, g.m, g.n, g.k, 1.0f, a.data(), g.ta ? g.m : g.k, b.data(),
                  g.tb ? g.k : g.n, 0.0f, c.data(), g.n);
      const double spent = SecondsSince(start);
      gemm_spent += spent;
      if (repeat > 0) shape_seconds[i].push_back(spent);
    }
    const auto start = std::chrono::steady_clock::now();
    mlp.value().ShardGradient(params.data(), inputs.data(), labels.data(), samples, grad.data());
    const double mlp_spent = SecondsSince(start);
    if (repeat > 0) {
      gemm_seconds.push_back(gemm_spent);
      mlp_seconds.push_back(mlp_spent);
    }
  }
  const double floor = Median(gemm_seconds);
  for (size_t i = 0; i < gemms.size(); ++i) {
    const Gemm& g = gemms[i];
    std::fprintf(stderr, "gemm ta=%d tb=%d m=%d n=%d k=%d gflops=%.2f\n", g.ta, g.tb, g.m, g.n, g.k,
                 2.0 * g.m * g.n * g.k / Median(shape_seconds[i]) / 1e9);
  }
  std::printf("gemm_flops_per_update=%.0f gemm_gflops=%.2f floor_update_s=%.6f mlp_update_s=%.6f gemm=%s\n",
              flops, flops / floor / 1e9, floor, Median(mlp_seconds),
              dmlp::CpuGemmDescription().isa.c_str());
  return 0;
}
