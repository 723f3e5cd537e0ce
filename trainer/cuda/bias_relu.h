// defines: BiasReluForward, ReluBackward
//
// The element-wise parts of a Dense layer around its GEMM, in flax's order
// (the dot product, then + bias, then ReLU): bit-equal to trainer/cpu/mlp_cpu.cc
// for the same GEMM output.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/status.h"

namespace dmlp::cuda {

/// y[i][j] = y[i][j] + bias[j], then relu (jax.nn.relu: NaN passes, -0 -> +0)
/// when `relu`. y: rows x cols row-major, in place. Enqueued on `stream`.
Status BiasReluForward(float* y, const float* bias, int64_t rows, int64_t cols, bool relu,
                       cudaStream_t stream);

/// delta[e] = 0 where !(activation[e] > 0) (the ReLU output below), in place.
Status ReluBackward(float* delta, const float* activation, int64_t count, cudaStream_t stream);

}  // namespace dmlp::cuda
