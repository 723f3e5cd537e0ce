// Adam as optax.adam: against a float64 evaluation of the formulas over many
// steps, and exact bits where they can be worked out by hand or were produced
// by optax itself.
#include "trainer/cpu/adam_cpu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace dmlp {
namespace {

TEST(AdamTest, CountSaturatesLikeOptaxSafeIncrement) {
  EXPECT_EQ(AdamNextCount(0), 1);
  EXPECT_EQ(AdamNextCount(41), 42);
  EXPECT_EQ(AdamNextCount(INT32_MAX - 1), INT32_MAX);
  EXPECT_EQ(AdamNextCount(INT32_MAX), INT32_MAX);
}

TEST(AdamTest, ScalarsAreJaxFloat32Constants) {
  const AdamScalars s = MakeAdamScalars(1, 1e-3);
  EXPECT_EQ(FloatBits(s.one_minus_b1), 0x3dcccccdu);  // float(1 - 0.9) == 0.1f
  EXPECT_EQ(FloatBits(s.b1), 0x3f666666u);
  EXPECT_EQ(FloatBits(s.one_minus_b2), 0x3a83126fu);  // float(1 - 0.999) == 0.001f
  EXPECT_EQ(FloatBits(s.b2), 0x3f7fbe77u);
  EXPECT_EQ(FloatBits(s.eps), FloatBits(1e-8f));
  EXPECT_EQ(FloatBits(s.negative_learning_rate), FloatBits(-1e-3f));
  // Count 1: 1 / (1 - 0.9f) with 1 - 0.9f == 0x3dccccd0 exactly (Sterbenz).
  EXPECT_EQ(FloatBits(s.inverse_bias_correction1), 0x411ffffeu);
  EXPECT_EQ(FloatBits(s.inverse_bias_correction2), 0x447a00d3u);
  // Far out, b^count underflows and the corrections are exactly 1.
  const AdamScalars late = MakeAdamScalars(INT32_MAX, 1e-3);
  EXPECT_EQ(late.inverse_bias_correction1, 1.0f);
  EXPECT_EQ(late.inverse_bias_correction2, 1.0f);
}

TEST(AdamTest, ZeroGradientLeavesEverythingUnchanged) {
  float p = 0.75f, mu = 0, nu = 0;
  AdamElement(MakeAdamScalars(1, 0.1), 0.0f, &p, &mu, &nu);
  EXPECT_EQ(p, 0.75f);  // update = 0 / (0 + eps) = 0
  EXPECT_EQ(FloatBits(mu), 0u);
  EXPECT_EQ(FloatBits(nu), 0u);
}

// optax's hyperparameters as jax holds them: float32 scalars. b2 = 0.999f is
// 1.3e-8 above 0.999, which moves 1 - b2^count by 1.3e-5 relative: a float64
// reference must use the same constants to be a reference.
constexpr double kB1 = 0.9f, kB2 = 0.999f, kOneMinusB1 = 0.1f, kOneMinusB2 = 0.001f, kEps = 1e-8f;

TEST(AdamTest, FirstStepMovesByAboutLearningRateTimesSign) {
  // Step 1: mu_hat = g, nu_hat = g^2 (up to the float32 constants), so the
  // update is about -lr * g / (|g| + eps).
  for (float g : {1.0f, -3.0f, 1e-3f}) {
    float p = 0, mu = 0, nu = 0;
    AdamElement(MakeAdamScalars(1, 0.01), g, &p, &mu, &nu);
    const double mu_hat = kOneMinusB1 * g / (1 - kB1), nu_hat = kOneMinusB2 * g * g / (1 - kB2);
    // A few float32 roundings of values near 0.01 (ulp 9.3e-10).
    EXPECT_NEAR(p, -0.01 * mu_hat / (std::sqrt(nu_hat) + kEps), 3e-9) << g;
  }
}

TEST(AdamTest, BitsProducedByOptax) {
  // jax.jit of optax.adam(1e-3)'s update and apply_updates on jax 0.10.2 CPU,
  // three updates with the same gradient: the compiled code the reference job
  // runs, whose FMAs (p', mu', nu') change p[5] at updates 2 and 3, p[4] at
  // update 3, mu[4], nu[4] and nu[5] from what an eager, un-jitted optax gives.
  float p[6] = {1.0f, -0.5f, 0.25f, 3.0f, 0.0f, 1e-3f};
  const float g[6] = {1.0f, 0.0f, -2.5f, 1e-4f, 7.0f, -1e-6f};
  float mu[6] = {}, nu[6] = {};
  const uint32_t expected_p[3][6] = {
      {0x3f7fbe77, 0xbf000000, 0x3e808312, 0x403fef9e, 0xba831236, 0x3b026c36},
      {0x3f7f7cee, 0xbf000000, 0x3e810624, 0x403fdf3c, 0xbb031227, 0x3b434f27},
      {0x3f7f3b65, 0xbf000000, 0x3e818936, 0x403fceda, 0xbb449b4f, 0x3b821919}};
  const uint32_t expected_mu[6] = {0x3e8ac083, 0, 0xbf2d70a4, 0x37e354ce, 0x3ff2d0e6, 0xb4917df5};
  const uint32_t expected_nu[6] = {0x3b446956, 0, 0x3c99724b, 0x2e03cf3b, 0x3e1660a5, 0x2757f4ea};
  int32_t count = 0;
  for (int step = 0; step < 3; ++step) {
    count = AdamNextCount(count);
    AdamUpdate(MakeAdamScalars(count, 1e-3), g, p, mu, nu, 6);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(FloatBits(p[i]), expected_p[step][i]) << step << " " << i;
  }
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(FloatBits(mu[i]), expected_mu[i]) << i;
    EXPECT_EQ(FloatBits(nu[i]), expected_nu[i]) << i;
  }
}

TEST(AdamTest, MatchesFloat64FormulasOverManySteps) {
  const int n = 4000, steps = 50;
  const double lr = 3e-3;
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> log_scale(-12, 2);
  std::vector<float> p(n), mu(n, 0), nu(n, 0), g(n);
  std::vector<double> p64(n), mu64(n, 0), nu64(n, 0), mu_size(n, 0);
  for (int i = 0; i < n; ++i) p64[i] = p[i] = static_cast<float>(normal(rng));
  double max_p = 0, max_mu = 0, max_nu = 0;
  int32_t count = 0;
  for (int step = 1; step <= steps; ++step) {
    count = AdamNextCount(count);
    for (int i = 0; i < n; ++i) g[i] = static_cast<float>(normal(rng) * std::exp(log_scale(rng)));
    AdamUpdate(MakeAdamScalars(count, lr), g.data(), p.data(), mu.data(), nu.data(), n);
    for (int i = 0; i < n; ++i) {
      mu64[i] = kOneMinusB1 * g[i] + kB1 * mu64[i];
      mu_size[i] = kOneMinusB1 * std::fabs(g[i]) + kB1 * mu_size[i];  // mu64 without cancellation
      nu64[i] = kOneMinusB2 * g[i] * g[i] + kB2 * nu64[i];
      const double mu_hat = mu64[i] / (1 - std::pow(kB1, step));
      const double nu_hat = nu64[i] / (1 - std::pow(kB2, step));
      p64[i] += -lr * mu_hat / (std::sqrt(nu_hat) + kEps);
      // Errors relative to the scale of each quantity: |p| (at least lr) for p,
      // as float32 rounds p + delta every step; for mu the sum of the sizes of
      // its terms (mu itself can cancel to near 0); nu itself.
      max_p = std::fmax(max_p, std::fabs(p[i] - p64[i]) / std::fmax(std::fabs(p64[i]), lr));
      max_mu = std::fmax(max_mu, std::fabs(mu[i] - mu64[i]) / mu_size[i]);
      max_nu = std::fmax(max_nu, std::fabs(nu[i] - nu64[i]) / std::fmax(nu64[i], 1e-30));
    }
  }
  std::printf("Adam vs float64 after %d steps: max rel error p %.3g mu %.3g nu %.3g\n", steps,
              max_p, max_mu, max_nu);
  // Measured 7.4e-6, 4.5e-7, 8.7e-7: p rounds p + delta each of 50 steps
  // (up to 50 half-ulps, 3e-6) on top of a few ulps in each update.
  EXPECT_LT(max_p, 2e-5);
  EXPECT_LT(max_mu, 4e-6);
  EXPECT_LT(max_nu, 4e-6);
}

}  // namespace
}  // namespace dmlp
