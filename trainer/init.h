// defines: KernelInitScale, InitParams
//
// Initial parameters, as flax's Dense defaults: kernels from
// variance_scaling(1, "fan_in", "truncated_normal") (a standard normal
// truncated to (-2, 2), times sqrt(1 / fan_in) / 0.87962566103423978), biases
// zero. Generated from SEED with the Philox definition in trainer/sample_math.h
// (counter {element, layer, 0, attempt}), so every rank and every platform
// starts from the same bits; the CUDA platform calls InitKernelValue with the
// scale computed here.
#pragma once

#include <cstdint>

#include "common/state_layout.h"
#include "common/status.h"

namespace dmlp {

/// float(sqrt(1 / fan_in) / 0.87962566103423978), computed in double on the host
/// (both steps are correctly rounded, so every platform gets the same float).
float KernelInitScale(int64_t fan_in);

/// Writes the initial parameters (parameter_count() floats, canonical layout).
/// MODEL_INVALID when a kernel has 2^32 elements or more (counter word 0 is the
/// element index).
/// MODEL_INVALID when a kernel has 2^32 elements or more (its element index is
/// one 32-bit counter word). Both platforms' initializers check this first.
Status CheckInitLimits(const StateLayout& layout);
Status InitParams(const StateLayout& layout, uint64_t seed, float* params);

}  // namespace dmlp
