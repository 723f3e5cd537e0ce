// defines: JaxKey, Threefry2x32, JaxKeyFromSeed, JaxFoldIn, JaxSplit, JaxBits32
//
// jax.random's default generator as jax 0.10.2 runs it (jax_threefry_partitionable
// on, jax_enable_x64 off): Threefry-2x32 with 20 rounds (Salmon et al., SC 2011,
// the rotation constants of Random123), and JAX's key derivation on top of it.
// What the reference job (shared/reference/train.py) calls, and dmlp with it:
//   key(seed)    = (0, seed)                          seed < 2^32 (JaxKeyFromSeed)
//   fold_in(k,d) = Threefry2x32(k, (0, d))            (jax: threefry_2x32(k, seed(d)))
//   split(k)[j]  = Threefry2x32(k, (0, j)) = fold_in(k, j)
//   bits(k)[n]   = w0 ^ w1 of Threefry2x32(k, (n >> 32, n & 0xffffffff))
// Checked bit for bit against jax: tests/data/jax_vectors.tsv (tests/unit/threefry_test.cc).
//
// Integer-only, so host and device agree trivially; DMLP_HOST_DEVICE lets the
// CUDA kernels call the same code.
#pragma once

#include <cstdint>

#include "trainer/math/device_macros.h"

namespace dmlp {

/// A jax.random threefry key: key_data(key) == [k0, k1].
struct JaxKey {
  uint32_t k0 = 0;
  uint32_t k1 = 0;
};

namespace threefry_detail {

DMLP_HOST_DEVICE DMLP_INLINE uint32_t RotateLeft(uint32_t value, int bits) {
  return (value << bits) | (value >> (32 - bits));
}

/// Four rounds with rotations r0..r3 (jax's apply_round: x0 += x1; x1 = rotl(x1) ^ x0).
DMLP_HOST_DEVICE DMLP_INLINE void FourRounds(uint32_t* x0, uint32_t* x1, int r0, int r1, int r2,
                                             int r3) {
  *x0 += *x1, *x1 = RotateLeft(*x1, r0) ^ *x0;
  *x0 += *x1, *x1 = RotateLeft(*x1, r1) ^ *x0;
  *x0 += *x1, *x1 = RotateLeft(*x1, r2) ^ *x0;
  *x0 += *x1, *x1 = RotateLeft(*x1, r3) ^ *x0;
}

}  // namespace threefry_detail

/// The Threefry parity constant of the key schedule (Skein's C240, 32-bit form).
inline constexpr uint32_t kThreefryParity = 0x1BD11BDAu;

/// Threefry-2x32, 20 rounds: the two words for counter (x0, x1) under `key`.
DMLP_HOST_DEVICE DMLP_INLINE JaxKey Threefry2x32(JaxKey key, uint32_t x0, uint32_t x1) {
  using threefry_detail::FourRounds;
  const uint32_t ks0 = key.k0, ks1 = key.k1, ks2 = key.k0 ^ key.k1 ^ kThreefryParity;
  x0 += ks0, x1 += ks1;
  FourRounds(&x0, &x1, 13, 15, 26, 6);
  x0 += ks1, x1 += ks2 + 1u;
  FourRounds(&x0, &x1, 17, 29, 16, 24);
  x0 += ks2, x1 += ks0 + 2u;
  FourRounds(&x0, &x1, 13, 15, 26, 6);
  x0 += ks0, x1 += ks1 + 3u;
  FourRounds(&x0, &x1, 17, 29, 16, 24);
  x0 += ks1, x1 += ks2 + 4u;
  FourRounds(&x0, &x1, 13, 15, 26, 6);
  x0 += ks2, x1 += ks0 + 5u;
  return JaxKey{x0, x1};
}

/// jax.random.key(seed) for seed < 2^32 (jax would wrap larger seeds: plan.cc refuses them).
DMLP_HOST_DEVICE DMLP_INLINE JaxKey JaxKeyFromSeed(uint32_t seed) { return JaxKey{0u, seed}; }

/// jax.random.fold_in(key, data).
DMLP_HOST_DEVICE DMLP_INLINE JaxKey JaxFoldIn(JaxKey key, uint32_t data) {
  return Threefry2x32(key, 0u, data);
}

/// jax.random.split(key)[index] (any split count: the partitionable split folds in the index).
DMLP_HOST_DEVICE DMLP_INLINE JaxKey JaxSplit(JaxKey key, uint32_t index) {
  return Threefry2x32(key, 0u, index);
}

/// Element `index` of jax.random.bits(key, shape) (uint32), `index` row-major in shape.
DMLP_HOST_DEVICE DMLP_INLINE uint32_t JaxBits32(JaxKey key, uint64_t index) {
  const JaxKey words =
      Threefry2x32(key, static_cast<uint32_t>(index >> 32), static_cast<uint32_t>(index));
  return words.k0 ^ words.k1;
}

}  // namespace dmlp
