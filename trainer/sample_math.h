// defines: LogPositive, SinCosTwoPi, BoxMuller, NormalPair, SampleFeatureBlock, SampleLabel,
//          kLabelBlock, kInitMaxAttempts, InitTruncatedNormal, InitKernelValue
//
// THE DATA AND INIT DEFINITION (a contract: the CPU and CUDA platforms both call
// these functions and must give the same bits; change nothing here without
// changing the golden values in tests/unit/{sample_math,data,init}_test.cc).
//
// Key: PhiloxKeyFromSeed(SEED) = {uint32(SEED), uint32(SEED >> 32)}.
//
// Data. Sample i (global index in [0, BATCH)) of the update (step s >= 1,
// microbatch m >= 0): feature f is lane f % 4 of block j = f / 4, the block
// being the four normals of Philox(counter {j, i, s, m}); its label is
// (uint64(w0) * CLASSES) >> 32 of Philox(counter {0xFFFFFFFF, i, s, m}).
// Every sample is a pure function of (SEED, s, m, i), so NUM_PROCESSES,
// DATA_SHARDS and PLATFORM cannot change it. The label is Lemire's
// multiply-shift: unbiased up to CLASSES / 2^32, no loop, no division.
//
// Normals. A block (w0, w1, w2, w3) gives two Box-Muller pairs,
// (w0, w1) -> (z0, z1) and (w2, w3) -> (z2, z3):
//   u1 = ((w0 >> 8) + 1) * 2^-24 in (0, 1]   (never 0: ln u1 is finite)
//   u2 = (w1 >> 8) * 2^-24       in [0, 1)
//   r = sqrt(-2 ln u1), z0 = r cos(2 pi u2), z1 = r sin(2 pi u2).
// 24 bits per uniform make both exact floats. Box-Muller (not cuRAND's
// curand_normal4 nor a ziggurat) because it is a fixed, short sequence of
// operations with no data-dependent loop.
//
// Init (counter word 2 = 0, which data never uses since steps start at 1):
// element e (row-major index of [in][out]) of Dense layer k's kernel takes, for
// attempt a = 0, 1, ..., the normals z0..z3 of Philox(counter {e, k, 0, a}) and
// keeps the first z with |z| < 2: a standard normal truncated to (-2, 2), as
// flax's variance_scaling(1, "fan_in", "truncated_normal"), which then scales by
// sqrt(1 / fan_in) / 0.87962566103423978 (that constant is the stddev of the
// truncated standard normal). REQUIRES every kernel < 2^32 elements.
//
// Why no libm: glibc's and CUDA's logf/sinf/cosf are accurate to an ulp or
// two but not correctly rounded, and they round differently, so the same
// sample would differ in its last bits between platforms. LogPositive and
// SinCosTwoPi below use only +, -, *, / and sqrt through device_macros.h's
// un-fused helpers, in a fixed order, so every platform computes the same bits.
// Accuracy against double libm (tests/unit/sample_math_test.cc): ln within
// 1.92 ulp over all normal floats, sin/cos(2 pi u) within 9.0e-8, z within
// 5.5e-7 (about one float ulp at the largest |z|, 5.77).
#pragma once

#include <cstdint>

#include "trainer/device_macros.h"
#include "trainer/philox.h"

namespace dmlp {

/// Natural log of a positive normal float, from +, -, *, / only.
/// REQUIRES: x is finite, positive and not subnormal.
DMLP_HOST_DEVICE DMLP_INLINE float LogPositive(float x) {
  // x = 2^e * m with m in [sqrt(1/2), sqrt(2)), exactly, on the bits: when the
  // mantissa exceeds sqrt(2)'s (0x3504F3), m takes exponent -1 instead of 0.
  // Integer selects rather than a branch: the condition is a coin flip for
  // random inputs, and mispredictions cost more than the arithmetic.
  const uint32_t bits = FloatBits(x);
  const uint32_t mantissa = bits & 0x007FFFFFu;
  const uint32_t above_sqrt2 = mantissa > 0x003504F3u ? 1u : 0u;
  const float m = FloatFromBits(mantissa | ((127u - above_sqrt2) << 23));
  const int32_t exponent = static_cast<int32_t>(bits >> 23) - 127 + static_cast<int32_t>(above_sqrt2);
  // ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716; m - 1 is exact
  // (Sterbenz), so ln m keeps full relative accuracy near m = 1. The series
  // stops after s^11: the next term is below 1e-10 relative.
  const float s = FDiv(FSub(m, 1.0f), FAdd(m, 1.0f));
  const float s2 = FMul(s, s);
  float poly = 0x1.745d18p-3f;                  // 2/11
  poly = FAdd(0x1.c71c72p-3f, FMul(s2, poly));  // 2/9
  poly = FAdd(0x1.24924ap-2f, FMul(s2, poly));  // 2/7
  poly = FAdd(0x1.99999ap-2f, FMul(s2, poly));  // 2/5
  poly = FAdd(0x1.555556p-1f, FMul(s2, poly));  // 2/3
  const float log_m = FAdd(FMul(2.0f, s), FMul(FMul(s, s2), poly));
  // ln 2 split (fdlibm): exponent * hi is exact for |exponent| < 128.
  const float e = static_cast<float>(exponent);
  return FAdd(FMul(e, 0x1.62e300p-1f), FAdd(FMul(e, 0x1.2fefa2p-17f), log_m));
}

/// sin and cos of 2*pi*u. REQUIRES: 0 <= u < 1.
DMLP_HOST_DEVICE DMLP_INLINE void SinCosTwoPi(float u, float* sin_out, float* cos_out) {
  // Exact quadrant reduction: 2 pi u = (pi/2) (q + f), 4u is exact, f = 4u - q
  // is exact, and moving f from (1/2, 1) to (-1/2, 0) is exact (Sterbenz).
  const float t = FMul(4.0f, u);
  const int floor_t = static_cast<int>(t);  // t >= 0
  const float fraction = FSub(t, static_cast<float>(floor_t));
  const int round_up = fraction > 0.5f ? 1 : 0;  // f - 0 == f, so no branch is needed
  const float f = FSub(fraction, static_cast<float>(round_up));
  const uint32_t quadrant = static_cast<uint32_t>(floor_t + round_up) & 3u;
  // Taylor polynomials of sin(pi/2 f) and cos(pi/2 f) in f, |f| <= 1/2; the
  // first omitted terms are below 2e-9. Horner in f^2 keeps every
  // intermediate a normal float (|f| >= 2^-22 or f == 0).
  const float f2 = FMul(f, f);
  float sin_poly = 0x1.507834p-13f;
  sin_poly = FAdd(-0x1.32d2ccp-8f, FMul(f2, sin_poly));
  sin_poly = FAdd(0x1.466bc6p-4f, FMul(f2, sin_poly));
  sin_poly = FAdd(-0x1.4abbcep-1f, FMul(f2, sin_poly));
  sin_poly = FAdd(0x1.921fb6p+0f, FMul(f2, sin_poly));  // pi/2
  const float sin_f = FMul(f, sin_poly);
  float cos_poly = -0x1.a6d1f2p-16f;
  cos_poly = FAdd(0x1.e1f506p-11f, FMul(f2, cos_poly));
  cos_poly = FAdd(-0x1.55d3c8p-6f, FMul(f2, cos_poly));
  cos_poly = FAdd(0x1.03c1f0p-2f, FMul(f2, cos_poly));
  cos_poly = FAdd(-0x1.3bd3ccp+0f, FMul(f2, cos_poly));
  const float cos_f = FAdd(1.0f, FMul(f2, cos_poly));
  // Quadrants 0..3 give (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s): a swap
  // on odd quadrants and sign flips, done on the bits (xor of the sign bit is
  // exactly IEEE negation) so that no branch depends on random data.
  const uint32_t swap_mask = 0u - (quadrant & 1u);
  const uint32_t sin_bits = FloatBits(sin_f), cos_bits = FloatBits(cos_f);
  const uint32_t first = (cos_bits & swap_mask) | (sin_bits & ~swap_mask);
  const uint32_t second = (sin_bits & swap_mask) | (cos_bits & ~swap_mask);
  *sin_out = FloatFromBits(first ^ ((quadrant >> 1) << 31));
  *cos_out = FloatFromBits(second ^ ((((quadrant + 1u) >> 1) & 1u) << 31));
}

/// Box-Muller: two standard normals from two random words (see the header comment).
DMLP_HOST_DEVICE DMLP_INLINE void BoxMuller(uint32_t word0, uint32_t word1, float* z0, float* z1) {
  const float u1 = FMul(static_cast<float>((word0 >> 8) + 1u), 0x1p-24f);
  const float u2 = FMul(static_cast<float>(word1 >> 8), 0x1p-24f);
  // 0 - ln(u1) rather than -ln(u1) so that u1 == 1 gives r = +0, not -0.
  const float r = FSqrt(FMul(2.0f, FSub(0.0f, LogPositive(u1))));
  float sin_v, cos_v;
  SinCosTwoPi(u2, &sin_v, &cos_v);
  *z0 = FMul(r, cos_v);
  *z1 = FMul(r, sin_v);
}

/// Normals z[2*pair], z[2*pair+1] of a block (pair 0: words w0,w1; pair 1: w2,w3).
DMLP_HOST_DEVICE DMLP_INLINE void NormalPair(const PhiloxBlock& block, int pair, float* first,
                                             float* second) {
  if (pair == 0) {
    BoxMuller(block.w0, block.w1, first, second);
  } else {
    BoxMuller(block.w2, block.w3, first, second);
  }
}

/// Random words of feature block `block` (features 4*block .. 4*block+3) of a sample.
/// REQUIRES: block < 0xFFFFFFFF (that counter is the label's).
DMLP_HOST_DEVICE DMLP_INLINE PhiloxBlock SampleFeatureBlock(PhiloxKey key, uint32_t block,
                                                            uint32_t sample, uint32_t step,
                                                            uint32_t microbatch) {
  return Philox4x32_10(PhiloxBlock{block, sample, step, microbatch}, key);
}

/// Counter word 0 of the label block; no feature block reaches it.
inline constexpr uint32_t kLabelBlock = 0xFFFFFFFFu;

/// Label of a sample, in [0, classes). REQUIRES: 1 <= classes <= INT32_MAX.
DMLP_HOST_DEVICE DMLP_INLINE int32_t SampleLabel(PhiloxKey key, uint32_t sample, uint32_t step,
                                                 uint32_t microbatch, uint32_t classes) {
  const PhiloxBlock words = Philox4x32_10(PhiloxBlock{kLabelBlock, sample, step, microbatch}, key);
  return static_cast<int32_t>((uint64_t{words.w0} * classes) >> 32);
}

/// Attempts (blocks of four normals) before InitTruncatedNormal gives up. Each
/// normal falls outside (-2, 2) with probability 0.0455, so reaching the cap
/// has probability 0.0455^64 < 1e-85 per element: never, in practice. The cap
/// only bounds the loop (a GPU thread's work is bounded and there is no error
/// path); past it the fallback is 0, a value inside the truncated range.
inline constexpr uint32_t kInitMaxAttempts = 16;

/// Standard normal truncated to (-2, 2) for kernel element `element` of Dense `layer`.
DMLP_HOST_DEVICE DMLP_INLINE float InitTruncatedNormal(PhiloxKey key, uint32_t element,
                                                       uint32_t layer) {
  for (uint32_t attempt = 0; attempt < kInitMaxAttempts; ++attempt) {
    const PhiloxBlock words = Philox4x32_10(PhiloxBlock{element, layer, 0u, attempt}, key);
    // Pairs are computed only when needed: the value is the same either way.
    for (int pair = 0; pair < 2; ++pair) {
      float first, second;
      NormalPair(words, pair, &first, &second);
      if (first > -2.0f && first < 2.0f) return first;
      if (second > -2.0f && second < 2.0f) return second;
    }
  }
  return 0.0f;
}

/// Initial value of kernel element `element` of Dense `layer`; `scale` from KernelInitScale.
DMLP_HOST_DEVICE DMLP_INLINE float InitKernelValue(PhiloxKey key, uint32_t element, uint32_t layer,
                                                   float scale) {
  return FMul(InitTruncatedNormal(key, element, layer), scale);
}

}  // namespace dmlp
