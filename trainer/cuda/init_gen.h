// defines: InitParamsOnDevice
//
// The initial parameters generated on the GPU with trainer/math/sample_math.h's
// functions and init.h's LecunNormalStddev and FlaxDenseHash, the code the CPU
// platform runs (trainer/math/init.cc), so the bits are InitParams'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/state_layout.h"
#include "common/status.h"

namespace dmlp::cuda {

/// Device version of InitParams: parameter_count() floats, canonical layout,
/// kernels lecun_normal, biases zero. `params` is a device pointer; enqueued
/// on `stream`. REQUIRES: seed < 2^32 (plan.cc).
Status InitParamsOnDevice(const StateLayout& layout, uint32_t seed, float* params,
                          cudaStream_t stream);

}  // namespace dmlp::cuda
