// defines: BiasGradient
//
// The bias gradient of a Dense layer: column sums of delta (rows x cols,
// row-major) in the CPU platform's order (trainer/cpu/mlp_cpu.cc,
// SumColumnsInRowOrder): each column from +0, adding rows 0, 1, ..., rows-1,
// one IEEE-rounded add each, no atomics. The same bits as the CPU platform.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/status.h"

namespace dmlp::cuda {

/// out[j] = ((0 + delta[0][j]) + delta[1][j]) + ...: the CPU's column sums,
/// bit for bit. Enqueued on `stream`.
Status BiasGradient(const float* delta, int64_t rows, int64_t cols, float* out, cudaStream_t stream);

}  // namespace dmlp::cuda
