#include "trainer/math/adam.h"

#include <climits>
#include <cmath>

namespace dmlp {
namespace {

constexpr double kB1 = 0.9;
constexpr double kB2 = 0.999;
constexpr double kEps = 1e-8;

// 1 / (1 - b^count) in float32 (see adam.h): float32 b, b^count rounded once
// from double, then jax's float32 subtraction and XLA's float32 reciprocal.
float InverseBiasCorrection(double b, int32_t count) {
  const double power = std::pow(static_cast<double>(static_cast<float>(b)), count);
  return 1.0f / (1.0f - static_cast<float>(power));
}

}  // namespace

int32_t AdamNextCount(int32_t count) { return count < INT32_MAX ? count + 1 : INT32_MAX; }

AdamScalars MakeAdamScalars(int32_t next_count, double learning_rate) {
  AdamScalars s;
  s.one_minus_b1 = static_cast<float>(1.0 - kB1);
  s.b1 = static_cast<float>(kB1);
  s.one_minus_b2 = static_cast<float>(1.0 - kB2);
  s.b2 = static_cast<float>(kB2);
  s.inverse_bias_correction1 = InverseBiasCorrection(kB1, next_count);
  s.inverse_bias_correction2 = InverseBiasCorrection(kB2, next_count);
  s.eps = static_cast<float>(kEps);
  s.negative_learning_rate = static_cast<float>(-learning_rate);
  return s;
}

}  // namespace dmlp
