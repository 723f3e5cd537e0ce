// The CPU MLP's loss and gradient against a float64 re-implementation: its
// central finite differences and its analytic gradient; determinism; shard
// additivity; jax.nn.relu's zero derivative at 0.
#include "trainer/cpu/mlp_cpu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "trainer/cpu/cpu_parallel.h"
#include "trainer/cpu/gemm_cpu.h"

namespace dmlp {
namespace {

void EnsureGemm() {
  static const bool ready = InitCpuGemm(1).ok();
  ASSERT_TRUE(ready);
}

StateLayout Layout(int64_t features, int64_t width, int64_t layers, int64_t classes) {
  Result<StateLayout> layout = StateLayout::Create({features, width, layers, classes});
  EXPECT_TRUE(layout.ok());
  return *layout;
}

// Float64 model, written independently of mlp_cpu.cc (plain loops, no GEMM).
struct Reference {
  const StateLayout& layout;
  const std::vector<double>& inputs;  // n x F
  const std::vector<int32_t>& labels;
  int64_t n, global_batch;

  // Activations per Dense layer (after ReLU for hidden layers) and the loss.
  double Forward(const std::vector<double>& params, std::vector<std::vector<double>>* acts,
                 std::vector<std::vector<double>>* pre) const {
    std::vector<double> below = inputs;
    for (int64_t k = 0; k < layout.dense_count(); ++k) {
      const int64_t in = layout.fan_in(k), out = layout.fan_out(k);
      const double* w = params.data() + layout.kernel(k).offset;
      const double* b = params.data() + layout.bias(k).offset;
      std::vector<double> z(n * out), h(n * out);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < out; ++j) {
          double sum = b[j];
          for (int64_t p = 0; p < in; ++p) sum += below[i * in + p] * w[p * out + j];
          z[i * out + j] = sum;
          h[i * out + j] = (k + 1 < layout.dense_count() && sum < 0) ? 0 : sum;
        }
      if (pre) pre->push_back(z);
      if (acts) acts->push_back(h);
      below = h;
    }
    const int64_t c = layout.shape().classes;
    double loss = 0;
    for (int64_t i = 0; i < n; ++i) {
      double row_max = below[i * c], sum = 0;
      for (int64_t j = 1; j < c; ++j) row_max = std::fmax(row_max, below[i * c + j]);
      for (int64_t j = 0; j < c; ++j) sum += std::exp(below[i * c + j] - row_max);
      loss += std::log(sum) + row_max - below[i * c + labels[i]];
    }
    return loss / global_batch;
  }

  std::vector<double> Gradient(const std::vector<double>& params) const {
    std::vector<std::vector<double>> acts, pre;
    Forward(params, &acts, &pre);
    std::vector<double> grad(params.size(), 0.0);
    const int64_t c = layout.shape().classes;
    std::vector<double> delta(n * c);
    for (int64_t i = 0; i < n; ++i) {
      const double* z = acts.back().data() + i * c;
      double row_max = z[0], sum = 0;
      for (int64_t j = 1; j < c; ++j) row_max = std::fmax(row_max, z[j]);
      for (int64_t j = 0; j < c; ++j) sum += std::exp(z[j] - row_max);
      for (int64_t j = 0; j < c; ++j)
        delta[i * c + j] = (std::exp(z[j] - row_max) / sum - (j == labels[i])) / global_batch;
    }
    for (int64_t k = layout.dense_count() - 1; k >= 0; --k) {
      const int64_t in = layout.fan_in(k), out = layout.fan_out(k);
      const std::vector<double>& below = k == 0 ? inputs : acts[k - 1];
      double* dw = grad.data() + layout.kernel(k).offset;
      double* db = grad.data() + layout.bias(k).offset;
      const double* w = params.data() + layout.kernel(k).offset;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < out; ++j) {
          db[j] += delta[i * out + j];
          for (int64_t p = 0; p < in; ++p) dw[p * out + j] += below[i * in + p] * delta[i * out + j];
        }
      if (k == 0) break;
      std::vector<double> next(n * in, 0.0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < in; ++p) {
          double sum = 0;
          for (int64_t j = 0; j < out; ++j) sum += delta[i * out + j] * w[p * out + j];
          next[i * in + p] = pre[k - 1][i * in + p] > 0 ? sum : 0;
        }
      delta = next;
    }
    return grad;
  }

  // Smallest |pre-activation| of a hidden unit: finite differences need it
  // well away from ReLU's kink.
  double SmallestHiddenMargin(const std::vector<double>& params) const {
    std::vector<std::vector<double>> pre;
    Forward(params, nullptr, &pre);
    double margin = INFINITY;
    for (size_t k = 0; k + 1 < pre.size(); ++k)
      for (double v : pre[k]) margin = std::fmin(margin, std::fabs(v));
    return margin;
  }
};

struct Problem {
  StateLayout layout;
  int64_t n, global_batch;
  std::vector<float> params, inputs;
  std::vector<int32_t> labels;
};

Problem MakeProblem(const StateLayout& layout, int64_t n, int64_t global_batch, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  Problem problem{layout, n, global_batch, {}, {}, {}};
  for (size_t i = 0; i < layout.parameter_count(); ++i) problem.params.push_back(0.7f * normal(rng));
  for (int64_t i = 0; i < n * layout.shape().features; ++i) problem.inputs.push_back(normal(rng));
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(layout.shape().classes - 1));
  for (int64_t i = 0; i < n; ++i) problem.labels.push_back(label(rng));
  return problem;
}

// Checks one problem; returns the largest float32-vs-float64 gradient error
// relative to the largest gradient entry.
double CheckGradient(const Problem& problem) {
  EnsureGemm();
  Result<CpuMlp> mlp = CpuMlp::Create(problem.layout, problem.n);
  EXPECT_TRUE(mlp.ok());
  std::vector<float> grad(problem.layout.parameter_count(), NAN);
  const float loss_sum = mlp->ShardGradient(problem.params.data(), problem.inputs.data(),
                                            problem.labels.data(), problem.global_batch,
                                            grad.data());

  const std::vector<double> params(problem.params.begin(), problem.params.end());
  const std::vector<double> inputs(problem.inputs.begin(), problem.inputs.end());
  const Reference ref{problem.layout, inputs, problem.labels, problem.n, problem.global_batch};
  EXPECT_GT(ref.SmallestHiddenMargin(params), 1e-3) << "pick another seed: a unit sits on the kink";
  const double loss = ref.Forward(params, nullptr, nullptr);
  EXPECT_NEAR(loss_sum, loss * problem.global_batch, 2e-6 * problem.n);

  const std::vector<double> analytic = ref.Gradient(params);
  double largest = 0;
  for (double g : analytic) largest = std::fmax(largest, std::fabs(g));
  double worst = 0;
  for (size_t e = 0; e < params.size(); ++e) {
    const double h = 1e-5;
    std::vector<double> plus = params, minus = params;
    plus[e] += h;
    minus[e] -= h;
    const double central = (ref.Forward(plus, nullptr, nullptr) - ref.Forward(minus, nullptr, nullptr)) / (2 * h);
    // float64 analytic vs float64 differences: O(h^2) + O(eps / h) ~ 1e-10.
    EXPECT_NEAR(analytic[e], central, 1e-8) << "element " << e;
    // float32 vs float64: rounding in a handful of float32 sums.
    EXPECT_NEAR(grad[e], analytic[e], 1e-6 * largest) << "element " << e;
    EXPECT_NEAR(grad[e], central, 1e-6 * largest) << "element " << e;
    worst = std::fmax(worst, std::fabs(grad[e] - analytic[e]) / largest);
  }
  return worst;
}

TEST(MlpCpuTest, GradientMatchesFloat64FiniteDifferences) {
  // F=3, W=4, LAYERS=2, C=3, a shard of 5 samples of a global batch of 10.
  const double worst = CheckGradient(MakeProblem(Layout(3, 4, 2, 3), 5, 10, 1));
  std::printf("tiny model: max |grad32 - grad64| / max|grad64| = %.3g\n", worst);
}

TEST(MlpCpuTest, GradientWithoutHiddenLayers) {
  CheckGradient(MakeProblem(Layout(4, 8, 0, 5), 6, 6, 2));
}

TEST(MlpCpuTest, GradientWithElevenDenseLayersUsesLayoutOffsets) {
  const StateLayout layout = Layout(3, 3, 10, 2);
  ASSERT_LT(layout.kernel(10).offset, layout.kernel(2).offset);  // Dense_10 sorts before Dense_2
  const double worst = CheckGradient(MakeProblem(layout, 4, 8, 3));
  std::printf("11 Dense layers: max |grad32 - grad64| / max|grad64| = %.3g\n", worst);
}

TEST(MlpCpuTest, DeterministicAcrossCallsAndWorkspaceReuse) {
  EnsureGemm();
  const Problem a = MakeProblem(Layout(6, 8, 2, 4), 7, 14, 4);
  const Problem b = MakeProblem(Layout(6, 8, 2, 4), 7, 14, 5);
  Result<CpuMlp> mlp = CpuMlp::Create(a.layout, 7);
  ASSERT_TRUE(mlp.ok());
  const size_t p = a.layout.parameter_count();
  std::vector<float> first(p), other(p), again(p);
  const float loss1 = mlp->ShardGradient(a.params.data(), a.inputs.data(), a.labels.data(), 14, first.data());
  mlp->ShardGradient(b.params.data(), b.inputs.data(), b.labels.data(), 14, other.data());
  const float loss2 = mlp->ShardGradient(a.params.data(), a.inputs.data(), a.labels.data(), 14, again.data());
  EXPECT_EQ(std::memcmp(first.data(), again.data(), p * 4), 0);
  EXPECT_EQ(std::memcmp(&loss1, &loss2, 4), 0);
  EXPECT_NE(first, other);
}

// The element-wise passes run on the rank's threads in pieces (bias and ReLU
// by rows, the ReLU mask by elements, the bias gradient by columns): big
// enough that every pass really splits, 1, 2 and 3 threads give the same bits.
TEST(MlpCpuTest, ThreadsOfTheElementWisePassesDoNotChangeABit) {
  const Problem problem = MakeProblem(Layout(40, 300, 2, 10), 160, 320, 9);
  const size_t p = problem.layout.parameter_count();
  Result<CpuMlp> mlp = CpuMlp::Create(problem.layout, 160);
  ASSERT_TRUE(mlp.ok());
  std::vector<std::vector<float>> grads;
  std::vector<float> losses;
  for (int threads : {1, 2, 3}) {
    ASSERT_TRUE(InitCpuGemm(threads).ok());
    SetCpuParallelThreads(threads);
    grads.emplace_back(p);
    losses.push_back(mlp->ShardGradient(problem.params.data(), problem.inputs.data(), problem.labels.data(), 320,
                                        grads.back().data()));
  }
  SetCpuParallelThreads(1);
  ASSERT_TRUE(InitCpuGemm(1).ok());
  for (size_t t = 1; t < grads.size(); ++t) {
    SCOPED_TRACE("threads " + std::to_string(t + 1));
    EXPECT_EQ(std::memcmp(grads[0].data(), grads[t].data(), p * 4), 0);
    EXPECT_EQ(std::memcmp(&losses[0], &losses[t], 4), 0);
  }
}

TEST(MlpCpuTest, ShardGradientsAddUpToTheBatchGradient) {
  EnsureGemm();
  const Problem whole = MakeProblem(Layout(5, 6, 1, 3), 8, 8, 6);
  const size_t p = whole.layout.parameter_count();
  Result<CpuMlp> full = CpuMlp::Create(whole.layout, 8), half = CpuMlp::Create(whole.layout, 4);
  ASSERT_TRUE(full.ok() && half.ok());
  std::vector<float> g(p), g0(p), g1(p);
  const float loss = full->ShardGradient(whole.params.data(), whole.inputs.data(), whole.labels.data(), 8, g.data());
  const float loss0 = half->ShardGradient(whole.params.data(), whole.inputs.data(), whole.labels.data(), 8, g0.data());
  const float loss1 = half->ShardGradient(whole.params.data(), whole.inputs.data() + 4 * 5,
                                          whole.labels.data() + 4, 8, g1.data());
  EXPECT_NEAR(loss, loss0 + loss1, 1e-5);
  for (size_t e = 0; e < p; ++e) EXPECT_NEAR(g[e], g0[e] + g1[e], 1e-6) << e;
}

TEST(MlpCpuTest, ReluDerivativeIsZeroAtZero) {
  // One sample with all-zero inputs and zero first-layer biases: every hidden
  // pre-activation of Dense_0 is exactly 0, so jax.nn.relu passes no gradient
  // and Dense_0's bias gradient is exactly 0.
  EnsureGemm();
  Problem problem = MakeProblem(Layout(3, 4, 2, 3), 1, 1, 7);
  std::fill(problem.inputs.begin(), problem.inputs.end(), 0.0f);
  const StateLeaf& bias0 = problem.layout.bias(0);
  std::fill(problem.params.begin() + bias0.offset, problem.params.begin() + bias0.offset + bias0.size, 0.0f);
  Result<CpuMlp> mlp = CpuMlp::Create(problem.layout, 1);
  ASSERT_TRUE(mlp.ok());
  std::vector<float> grad(problem.layout.parameter_count(), NAN);
  mlp->ShardGradient(problem.params.data(), problem.inputs.data(), problem.labels.data(), 1, grad.data());
  for (size_t e = 0; e < bias0.size; ++e) EXPECT_EQ(grad[bias0.offset + e], 0.0f);
  const StateLeaf& bias2 = problem.layout.bias(2);  // the output layer still learns
  double output_bias = 0;
  for (size_t e = 0; e < bias2.size; ++e) output_bias += std::fabs(grad[bias2.offset + e]);
  EXPECT_GT(output_bias, 0.1);
}

TEST(MlpCpuTest, LossOfUniformLogitsIsLogClasses) {
  EnsureGemm();
  Problem problem = MakeProblem(Layout(3, 4, 1, 10), 4, 4, 8);
  std::fill(problem.params.begin(), problem.params.end(), 0.0f);  // all logits 0
  Result<CpuMlp> mlp = CpuMlp::Create(problem.layout, 4);
  ASSERT_TRUE(mlp.ok());
  std::vector<float> grad(problem.layout.parameter_count());
  const float loss_sum = mlp->ShardGradient(problem.params.data(), problem.inputs.data(),
                                            problem.labels.data(), 4, grad.data());
  EXPECT_NEAR(loss_sum / 4, std::log(10.0), 1e-6);
}

TEST(MlpCpuTest, CreateRejectsBadShapes) {
  EXPECT_EQ(CpuMlp::Create(Layout(3, 4, 1, 2), 0).status().code(), "MODEL_INVALID");
  EXPECT_EQ(CpuMlp::Create(Layout(3, 4, 1, 2), int64_t{1} << 31).status().code(), "MODEL_INVALID");
}

}  // namespace
}  // namespace dmlp
