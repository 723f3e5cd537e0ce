// defines: LecunNormalStddev, FlaxDenseHash, InitParams
//
// Initial parameters: model.init of the reference job's flax MLP, bit for bit.
// Kernels are lecun_normal (variance_scaling(1, "fan_in", "truncated_normal"):
// truncated_normal(-2, 2) times LecunNormalStddev(fan_in)), drawn with Dense_k's
// kernel key (trainer/math/sample_math.h); biases are zero. The CUDA platform calls
// the same element function with the stddev and key computed here
// (trainer/cuda/init_gen.cu), so every rank and platform starts from the same bits.
#pragma once

#include <cstdint>

#include "common/state_layout.h"
#include "common/status.h"

namespace dmlp {

/// jax's float32 stddev: sqrt_f32(f32(1.0 / fan_in)) / f32(0.87962566103423978),
/// each step rounded in float32 as jax computes it (not once from double).
float LecunNormalStddev(int64_t fan_in);

/// flax's make_rng data for Dense_<layer>'s kernel: the big-endian first 4
/// bytes of SHA-1("Dense_<layer>" 0x01), the scope name and the rng counter
/// (flax.core.scope._fold_in_static).
uint32_t FlaxDenseHash(int64_t layer);

/// Writes the initial parameters (parameter_count() floats, canonical layout).
/// REQUIRES: seed < 2^32 (plan.cc).
Status InitParams(const StateLayout& layout, uint32_t seed, float* params);

}  // namespace dmlp
