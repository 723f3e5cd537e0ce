// defines: BiasGradient, BiasGradientScratchFloats, kBiasGradRowsPerChunk
//
// The bias gradient of a Dense layer: column sums of delta (rows x cols,
// row-major), in a fixed order and without atomics (see the kernels).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace dmlp::cuda {

/// Rows summed by one chunk (the first level of the fixed summation order).
inline constexpr int64_t kBiasGradRowsPerChunk = 256;

/// Floats of scratch BiasGradient needs for a rows x cols delta.
size_t BiasGradientScratchFloats(int64_t rows, int64_t cols);

/// out[j] = sum_i delta[i][j], summed in a fixed order that depends only on
/// `rows`. scratch: BiasGradientScratchFloats(rows, cols) floats. Enqueued on `stream`.
Status BiasGradient(const float* delta, int64_t rows, int64_t cols, float* scratch, float* out,
                    cudaStream_t stream);

}  // namespace dmlp::cuda
