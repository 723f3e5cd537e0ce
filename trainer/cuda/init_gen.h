// defines: InitParamsOnDevice
//
// The initial parameters generated on the GPU with trainer/sample_math.h's
// InitKernelValue and init.h's KernelInitScale, the code the CPU platform runs
// (trainer/init.cc), so the bits are InitParams'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/state_layout.h"
#include "common/status.h"

namespace dmlp::cuda {

/// Device version of InitParams: parameter_count() floats, canonical layout,
/// kernels truncated-normal, biases zero. MODEL_INVALID as InitParams.
/// `params` is a device pointer; enqueued on `stream`.
Status InitParamsOnDevice(const StateLayout& layout, uint64_t seed, float* params,
                          cudaStream_t stream);

}  // namespace dmlp::cuda
