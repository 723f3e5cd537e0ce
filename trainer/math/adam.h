// defines: AdamScalars, AdamNextCount, MakeAdamScalars, AdamElement
//
// optax.adam(learning_rate) (b1 0.9, b2 0.999, eps 1e-8, eps_root 0), step by
// step as optax 0.2.x computes it in float32 (optax/_src/transform.py
// scale_by_adam, tree_utils/_tree_math.py tree_update_moment /
// tree_bias_correction, transform.py scale_by_learning_rate, update.py
// apply_updates):
//   count' = safe_increment(count)                        int32, saturating
//   mu'    = (1 - b1) * g + b1 * mu
//   nu'    = (1 - b2) * (g * g) + b2 * nu
//   mu_hat = mu' / (1 - b1^count')
//   nu_hat = nu' / (1 - b2^count')
//   u      = mu_hat / (sqrt(nu_hat + eps_root) + eps)     (+ 0 is dropped: nu_hat >= +0)
//   p'     = p + (-learning_rate) * u
// Python evaluates 1 - b1, 1 - b2 and -learning_rate in double; jax rounds
// those weak-typed scalars to float32, as MakeAdamScalars does.
//
// Bias corrections: jax computes 1 - b^count' as a float32 scalar, and XLA's
// algebraic simplifier rewrites `array / broadcast(scalar)` into
// `array * broadcast(1 / scalar)`, so the compiled reference multiplies by the
// float32 reciprocal; dmlp does the same, the reciprocal computed once per
// update on the host and passed to both platforms. b^count' is rounded once
// from double (XLA's CPU powf is not correctly rounded: 1 - 0.999^count'
// differs from jax's in the last bit at 2 of the first 100000 counts).
//
// Checked against optax 0.2.6 / jax 0.10.2 on the CPU: AdamElement is the
// optimized HLO of optax.adam op for op, and XLA's CPU code generator fuses
// its three `a * b + c` into FMAs, which AdamElement writes out as FFma (one
// rounding on every platform, so the CUDA kernel still gets the same bits):
//   mu' = fma(1 - b1, g, b1 * mu),  nu' = fma(1 - b2, g * g, b2 * nu),
//   p'  = fma(-learning_rate, u, p).
// A jitted optax.adam and this agree on every bit of p, mu and nu over
// 200000 random elements x 6 updates (jax's eager, un-jitted optax does not
// fuse, and differs). Without the FMAs, the reference comparison
// (e2e.reference.against_reference, SEED=5 LEARNING_RATE=0.003 BATCH=64
// MICROBATCHES=2 FEATURES=32 WIDTH=64 LAYERS=2 CLASSES=5) stayed within
// 1.6e-7 of the reference's loss for 21 steps, then jumped to 7e-6 at step 23
// and 5.3e-4 at step 49: Adam turns last-bit differences of near-zero moments
// into learning-rate-sized steps. With them: within 1.5e-7 for all 50 steps.
// AdamElement is the per-element update for the CPU loop (trainer/cpu/adam_cpu.h)
// and the CUDA kernel (trainer/cuda/adam_update.h) alike: un-fused operations
// (device_macros.h) in that order, so both give the same bits from the same
// inputs. The loops over it belong to the platforms; this file depends on none.
#pragma once

#include <cstdint>

#include "trainer/math/device_macros.h"

namespace dmlp {

/// Everything AdamElement needs, all float32 as jax holds them.
struct AdamScalars {
  float one_minus_b1 = 0;       // float(1 - 0.9)
  float b1 = 0;                 // float(0.9)
  float one_minus_b2 = 0;       // float(1 - 0.999)
  float b2 = 0;                 // float(0.999)
  float inverse_bias_correction1 = 0;  // 1 / (1 - b1^count'), all float32
  float inverse_bias_correction2 = 0;  // 1 / (1 - b2^count')
  float eps = 0;                // float(1e-8)
  float negative_learning_rate = 0;  // float(-learning_rate)
};

/// optax's safe_increment: count + 1, staying at INT32_MAX.
int32_t AdamNextCount(int32_t count);

/// Scalars for the update whose new count is `next_count` (= AdamNextCount(count)).
/// REQUIRES: next_count >= 1; learning_rate finite and > 0.
AdamScalars MakeAdamScalars(int32_t next_count, double learning_rate);

/// One element: updates p, mu, nu in place from gradient g.
DMLP_HOST_DEVICE DMLP_INLINE void AdamElement(const AdamScalars& s, float g, float* p, float* mu,
                                              float* nu) {
  const float mu_next = FFma(s.one_minus_b1, g, FMul(s.b1, *mu));
  const float nu_next = FFma(s.one_minus_b2, FMul(g, g), FMul(s.b2, *nu));
  const float mu_hat = FMul(mu_next, s.inverse_bias_correction1);
  const float nu_hat = FMul(nu_next, s.inverse_bias_correction2);
  const float update = FDiv(mu_hat, FAdd(FSqrt(nu_hat), s.eps));
  *p = FFma(s.negative_learning_rate, update, *p);
  *mu = mu_next;
  *nu = nu_next;
}

}  // namespace dmlp
