// defines: XlaLogF32, XlaLog1pF32, XlaErfInvF32
//
// jax.lax.erf_inv (and the log1p and log inside it) in float32 as XLA:CPU
// computes them for jax 0.10.2 / jaxlib 0.10.2: not the Python source but the
// code jaxlib compiles. erf_inv is lowered to Giles' single-precision
// polynomial ("Approximating the erfinv function", GPU Gems / 2010): w =
// -log1p(-x*x), then a degree-8 polynomial in w - 2.5 (w < 5) or sqrt(w) - 3.
// XLA's elemental emitter writes log1p as a rational function for |x| < sqrt(2)-1
// and log(1 + x) otherwise, and log as Cephes' logf split into three
// polynomials (Eigen's plog). The HLO is in the dump of any jax.random.normal
// (XLA_FLAGS=--xla_dump_to=DIR), the LLVM IR in its *.ir-with-opt.ll.
//
// The FMAs. XLA:CPU compiles with LLVM's AllowFPOpFusion=Fast, so the x86
// backend fuses a multiply into the add that uses it when the product has no
// other use. Which pairs it fused was read off the machine code jaxlib made
// (the dumped obj-file.*.o, on an AVX-512 Xeon) and is written out below as
// FFma; every other product and sum is rounded on its own (FMul, FAdd), and the
// build never contracts (-ffp-contract=off, --fmad=false). The result: all
// 2^23 inputs of jax.random.normal's and of truncated_normal's final step give
// jax's bits (tests/data/jax_sample_tables.tsv, tests/unit/sample_math_test.cc).
//
// Constants are the float32 values in XLA's IR, written in hex: one changed bit
// changes the tables' hashes. Every function is branch-free (selects), so the
// host compiler vectorizes loops over it (trainer/math/data.cc) with the same bits.
#pragma once

#include <cstdint>

#include "trainer/math/device_macros.h"

namespace dmlp {

/// XLA:CPU's float32 log. REQUIRES: w finite, > 0 (what erf_inv gives it).
DMLP_HOST_DEVICE DMLP_INLINE float XlaLogF32(float w) {
  // w = 2^e * m, m in [0.5, 1), exactly, on the bits (w >= FLT_MIN: no subnormal).
  const float normal_w = w > 0x1p-126f ? w : 0x1p-126f;
  const uint32_t bits = FloatBits(normal_w);
  const float m = FloatFromBits((bits & 0x807FFFFFu) | 0x3F000000u);
  const float e_plus_one =
      FAdd(static_cast<float>(static_cast<int32_t>(bits >> 23) - 127), 1.0f);
  // Below sqrt(1/2), m -> 2m and e -> e - 1 (Cephes), so x = m - 1 is in [-0.29, 0.41].
  // Both arms are computed and then selected, here and below: a conditional
  // float operation (which may trap, -ftrapping-math) keeps loops scalar.
  const bool below = m < 0x1.6a09e6p-1f;
  const float e_minus_one = FSub(e_plus_one, 1.0f);
  const float e = below ? e_minus_one : e_plus_one;
  const float x = FAdd(FAdd(m, -1.0f), below ? m : 0.0f);
  const float z = FMul(x, x);
  const float x3 = FMul(z, x);
  const float b1 = FFma(FFma(x, 0x1.204376p-4f, -0x1.d7a370p-4f), x, 0x1.de4a34p-4f);
  const float b2 = FFma(FFma(x, -0x1.fcba9ep-4f, 0x1.23d37ep-3f), x, -0x1.555ca0p-3f);
  const float b3 = FFma(FFma(x, 0x1.999d58p-3f, -0x1.fffff8p-3f), x, 0x1.555554p-2f);
  const float poly = FFma(FFma(b1, x3, b2), x3, b3);
  const float tail = FFma(poly, x3, FMul(e, -0x1.bd0106p-13f));  // + e * ln2_lo
  const float head = FFma(-0.5f, z, x);
  return FFma(e, 0x1.63p-1f, FAdd(tail, head));  // + e * ln2_hi (0.693359375)
}

/// XLA:CPU's float32 log1p. REQUIRES: -1 < t, t finite.
DMLP_HOST_DEVICE DMLP_INLINE float XlaLog1pF32(float t) {
  // |t| < sqrt(2) - 1: t - t^2/2 + t^3 P(t)/Q(t), P and Q of degree 6 (Cephes log1p).
  const float t2 = FMul(t, t);
  float numerator = 0x1.7bc096p-15f;  // 4.527e-5 (XLA writes 0 * t + c: the same value)
  numerator = FFma(numerator, t, 0x1.fe818ap-2f);
  numerator = FFma(numerator, t, 0x1.a509f4p+2f);
  numerator = FFma(numerator, t, 0x1.de9738p+4f);
  numerator = FFma(numerator, t, 0x1.e798ecp+5f);
  numerator = FFma(numerator, t, 0x1.c8e75ap+5f);
  numerator = FFma(numerator, t, 0x1.40a202p+4f);
  float denominator = 1.0f;
  denominator = FFma(denominator, t, 0x1.e2035ap+3f);
  denominator = FFma(denominator, t, 0x1.4c30b6p+6f);
  denominator = FFma(denominator, t, 0x1.bb865ap+7f);
  denominator = FFma(denominator, t, 0x1.351946p+8f);
  denominator = FFma(denominator, t, 0x1.b0db14p+7f);
  denominator = FFma(denominator, t, 0x1.e0f304p+5f);
  const float cubic = FMul(FMul(t, t2), FDiv(numerator, denominator));
  const float small = FAdd(t, FFma(-0.5f, t2, cubic));
  const float large = XlaLogF32(FAdd(t, 1.0f));
  const float magnitude = FloatFromBits(FloatBits(t) & 0x7FFFFFFFu);
  return magnitude < 0x1.a8279ap-2f ? small : large;
}

/// XLA:CPU's float32 erf_inv (Giles). REQUIRES: -1 < u < 1 (|u| == 1 gives +-inf).
DMLP_HOST_DEVICE DMLP_INLINE float XlaErfInvF32(float u) {
  const float log1p = XlaLog1pF32(FMul(u, 0.0f - u));  // -w
  const bool central = log1p > -5.0f;                  // w < 5
  const float x_central = FSub(-2.5f, log1p);
  const float x_tail = FAdd(FSqrt(0.0f - log1p), -3.0f);
  const float x = central ? x_central : x_tail;
  float p = FFma(central ? 0x1.e2cb10p-26f : -0x1.a3e136p-13f, x,
                 central ? 0x1.70966cp-22f : 0x1.a76ad6p-14f);
  p = FFma(x, p, central ? -0x1.d8e6aep-19f : 0x1.61b8e4p-10f);
  p = FFma(x, p, central ? -0x1.26b582p-18f : -0x1.e17bcep-9f);
  p = FFma(x, p, central ? 0x1.ca65b6p-13f : 0x1.7824f6p-8f);
  p = FFma(x, p, central ? -0x1.48a810p-10f : -0x1.f38baep-8f);
  p = FFma(x, p, central ? -0x1.11c9dep-8f : 0x1.354afcp-7f);
  p = FFma(x, p, central ? 0x1.f91ec6p-3f : 0x1.006db6p+0f);
  p = FFma(x, p, central ? 0x1.805c5ep+0f : 0x1.6a9efcp+1f);
  const bool at_one = (FloatBits(u) & 0x7FFFFFFFu) == 0x3F800000u;
  return FMul(u, at_one ? FloatFromBits(0x7F800000u) : p);
}

}  // namespace dmlp
