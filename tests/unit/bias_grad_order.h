// defines: BiasGradInCpuOrder
//
// The bias gradient's order, the CPU platform's (trainer/cpu/mlp_cpu.cc,
// SumColumnsInRowOrder), replayed in float on the host: each column from +0,
// rows 0, 1, ... in turn. Shared by the GPU unit test (cuda_kernels_test.cc)
// and the simulator's kernel check (tests/e2e/gpu_sim/kernels_check.cu), so
// both hold trainer/cuda/bias_grad.cu to one statement of its order.
// Header-only and C++17: nvcc 11.8 compiles it.
#pragma once

#include <cstdint>
#include <vector>

namespace dmlp::testing {

inline std::vector<float> BiasGradInCpuOrder(const std::vector<float>& delta, int64_t rows, int64_t cols) {
  std::vector<float> out(cols, 0.0f);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col) out[col] = out[col] + delta[row * cols + col];
  return out;
}

}  // namespace dmlp::testing
