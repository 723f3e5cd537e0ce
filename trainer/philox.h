// defines: PhiloxKey, PhiloxBlock, PhiloxKeyFromSeed, Philox4x32_10
//
// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw,
// "Parallel random numbers: as easy as 1, 2, 3" (SC 2011), with the constants
// of Random123 and cuRAND (curand_philox4x32_x.h). A block of four 32-bit
// words is a pure function of (counter, key): no state, no sequence, so any
// rank, shard or GPU thread computes any sample directly and gets the same bits.
// Known answers: tests/data/philox4x32_10_kat.tsv (Random123's kat_vectors).
//
// Integer-only, so host and device agree trivially; DMLP_HOST_DEVICE lets the
// CUDA kernels call the same code.
#pragma once

#include <cstdint>

#include "trainer/device_macros.h"

namespace dmlp {

struct PhiloxKey {
  uint32_t k0 = 0;
  uint32_t k1 = 0;
};

/// Four 32-bit words: a counter going in, or random words coming out.
struct PhiloxBlock {
  uint32_t w0 = 0;
  uint32_t w1 = 0;
  uint32_t w2 = 0;
  uint32_t w3 = 0;
};

inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;  // round multipliers
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // key schedule: golden ratio
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;  // key schedule: sqrt(3) - 1

/// The job's key: low and high halves of SEED (SEED is 0 .. 2^63-1).
DMLP_HOST_DEVICE DMLP_INLINE PhiloxKey PhiloxKeyFromSeed(uint64_t seed) {
  return PhiloxKey{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

namespace philox_detail {

DMLP_HOST_DEVICE DMLP_INLINE PhiloxBlock Round(PhiloxBlock c, PhiloxKey key) {
  const uint64_t product0 = uint64_t{kPhiloxM0} * c.w0;
  const uint64_t product1 = uint64_t{kPhiloxM1} * c.w2;
  const uint32_t hi0 = static_cast<uint32_t>(product0 >> 32);
  const uint32_t lo0 = static_cast<uint32_t>(product0);
  const uint32_t hi1 = static_cast<uint32_t>(product1 >> 32);
  const uint32_t lo1 = static_cast<uint32_t>(product1);
  return PhiloxBlock{hi1 ^ c.w1 ^ key.k0, lo1, hi0 ^ c.w3 ^ key.k1, lo0};
}

}  // namespace philox_detail

/// Philox4x32 with 10 rounds: the random block for `counter` under `key`.
DMLP_HOST_DEVICE DMLP_INLINE PhiloxBlock Philox4x32_10(PhiloxBlock counter, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.k0 += kPhiloxW0;
      key.k1 += kPhiloxW1;
    }
    counter = philox_detail::Round(counter, key);
  }
  return counter;
}

}  // namespace dmlp
