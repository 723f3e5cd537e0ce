// defines: kJaxSqrt2, JaxUnitFloat, JaxNormalFromBits, JaxTruncatedNormalFromBits,
//          JaxRandint, DataKey, InitKey, UpdateKey, SampleImageKey, SampleLabel,
//          DenseKernelKey
//
// THE DATA AND INIT DEFINITION: the reference job's (shared/reference/train.py)
// samples and flax's initial parameters, bit for bit, as jax 0.10.2 / flax
// 0.12.5 compute them on the CPU. The CPU and CUDA platforms both call these
// functions and get the same bits. Known answers from the real jax:
// tests/data/jax_vectors.tsv and jax_sample_tables.tsv (script beside them).
// Change nothing here without changing kDataDefinitionId (data_definition.h)
// and regenerating them.
//
// Keys (trainer/math/threefry.h): init_key, data_key = split(key(SEED)).
//
// Data. Sample i (global index in [0, BATCH)) of the update (step s >= 1,
// microbatch m >= 0) is train.py's local_batch:
//   key = fold_in(fold_in(data_key, s), m)
//   image_key, label_key = split(fold_in(key, i))
//   features = normal(image_key, (FEATURES,)), label = randint(label_key, (), 0, CLASSES)
// so every sample is a pure function of (SEED, s, m, i): NUM_PROCESSES,
// DATA_SHARDS and PLATFORM cannot change it.
//
// normal: u = max(lo, f * 2 + lo), lo = -1 + 2^-24, f = JaxUnitFloat(bits) in
// [0, 1); then sqrt(2) * erf_inv(u) (trainer/math/xla_special.h).
//
// Init: model.init of train.py's MLP. Dense_k's kernel key is fold_in(init_key,
// H_k), H_k the big-endian first 4 bytes of SHA-1("Dense_k" 0x01) (flax's scope
// path and make_rng counter, DenseKernelKey's caller computes it); element e
// (row-major in [fan_in][out]) is truncated_normal(-2, 2) of bits(kernel_key)[e]
// times lecun_normal's stddev; biases are zero.
//
// No libm anywhere: +, -, *, /, sqrt and fma are correctly rounded, and
// device_macros.h keeps each one what it is on every platform.
#pragma once

#include <cstdint>

#include "trainer/math/data_definition.h"
#include "trainer/math/device_macros.h"
#include "trainer/math/threefry.h"
#include "trainer/math/xla_special.h"

namespace dmlp {

/// sqrt(2) in float32, as jax's np.array(np.sqrt(2), float32).
inline constexpr float kJaxSqrt2 = 0x1.6a09e6p+0f;

/// jax.random.uniform's [0, 1) float from 32 random bits: the top 23 as the mantissa of [1, 2), minus 1.
DMLP_HOST_DEVICE DMLP_INLINE float JaxUnitFloat(uint32_t bits) {
  return FSub(FloatFromBits((bits >> 9) | 0x3F800000u), 1.0f);
}

/// jax.random.normal (float32) from its 32 random bits.
DMLP_HOST_DEVICE DMLP_INLINE float JaxNormalFromBits(uint32_t bits) {
  constexpr float kLow = -0x1.fffffep-1f;  // nextafter(-1, 0); hi - lo rounds to 2
  // f * 2 is exact, so XLA's fused and an unfused multiply-add agree here.
  const float scaled = FFma(JaxUnitFloat(bits), 2.0f, kLow);
  const float u = scaled > kLow ? scaled : kLow;
  return FMul(XlaErfInvF32(u), kJaxSqrt2);
}

// truncated_normal(-2, 2)'s constants as jax computes them in float32 (its own
// erf, at run time): a = erf(-2/sqrt2), b = erf(2/sqrt2), b - a, and the clip
// bounds nextafter(-+2, 0).
inline constexpr float kTruncatedLowCdf = -0x1.e8b430p-1f;  // a, 0xbf745a18
inline constexpr float kTruncatedCdfSpan = 0x1.e8b430p+0f;  // b - a, 0x3ff45a18
inline constexpr float kTruncatedBound = 0x1.fffffep+0f;    // 2 - 2^-22

/// jax.random.truncated_normal(key, -2, 2) (float32) from its 32 random bits.
DMLP_HOST_DEVICE DMLP_INLINE float JaxTruncatedNormalFromBits(uint32_t bits) {
  // b - a is not a power of two: XLA's FMA here decides the last bit.
  const float scaled = FFma(JaxUnitFloat(bits), kTruncatedCdfSpan, kTruncatedLowCdf);
  const float u = scaled > kTruncatedLowCdf ? scaled : kTruncatedLowCdf;
  const float z = FMul(XlaErfInvF32(u), kJaxSqrt2);
  const float above = z > -kTruncatedBound ? z : -kTruncatedBound;
  return above < kTruncatedBound ? above : kTruncatedBound;
}

/// jax.random.randint(key, (), 0, span) for int32, as jax computes it: 64
/// random bits reduced mod span in uint32 arithmetic (wrapping products).
/// REQUIRES: 1 <= span <= INT32_MAX.
DMLP_HOST_DEVICE DMLP_INLINE int32_t JaxRandint(JaxKey key, uint32_t span) {
  const uint32_t higher = JaxBits32(JaxSplit(key, 0), 0);
  const uint32_t lower = JaxBits32(JaxSplit(key, 1), 0);
  uint32_t multiplier = 65536u % span;  // 2^(nbits/2) mod span
  multiplier = (multiplier * multiplier) % span;
  const uint32_t offset = (higher % span) * multiplier + lower % span;
  return static_cast<int32_t>(offset % span);
}

/// data_key of train.py: split(key(SEED))[1].
DMLP_HOST_DEVICE DMLP_INLINE JaxKey DataKey(uint32_t seed) {
  return JaxSplit(JaxKeyFromSeed(seed), 1);
}

/// init_key of train.py: split(key(SEED))[0].
DMLP_HOST_DEVICE DMLP_INLINE JaxKey InitKey(uint32_t seed) {
  return JaxSplit(JaxKeyFromSeed(seed), 0);
}

/// The key of one update: fold_in(fold_in(data_key, step), microbatch).
DMLP_HOST_DEVICE DMLP_INLINE JaxKey UpdateKey(JaxKey data_key, uint32_t step, uint32_t microbatch) {
  return JaxFoldIn(JaxFoldIn(data_key, step), microbatch);
}

/// image_key of sample `index`: feature f is JaxNormalFromBits(JaxBits32(image_key, f)).
DMLP_HOST_DEVICE DMLP_INLINE JaxKey SampleImageKey(JaxKey update_key, uint32_t index) {
  return JaxSplit(JaxFoldIn(update_key, index), 0);
}

/// Label of sample `index`, in [0, classes). REQUIRES: 1 <= classes <= INT32_MAX.
DMLP_HOST_DEVICE DMLP_INLINE int32_t SampleLabel(JaxKey update_key, uint32_t index,
                                                 uint32_t classes) {
  return JaxRandint(JaxSplit(JaxFoldIn(update_key, index), 1), classes);
}

/// Dense_k's kernel key: fold_in(init_key, name_hash), name_hash = FlaxDenseHash(k) (init.h).
DMLP_HOST_DEVICE DMLP_INLINE JaxKey DenseKernelKey(JaxKey init_key, uint32_t name_hash) {
  return JaxFoldIn(init_key, name_hash);
}

}  // namespace dmlp
