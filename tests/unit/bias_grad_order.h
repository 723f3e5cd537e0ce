// defines: BiasGradInKernelOrder
//
// The bias gradient's documented order (trainer/cuda/bias_grad.cu), replayed
// in float on the host: chunks of kBiasGradRowsPerChunk rows, 8 lanes of rows
// y, y+8, ... per chunk combined by a tree (4, 2, 1), chunks folded left to
// right. Shared by the GPU unit test (cuda_kernels_test.cc) and the simulator's
// kernel check (tests/e2e/gpu_sim/kernels_check.cu), so both hold the kernel
// to one statement of its order. Header-only and C++17: nvcc 11.8 compiles it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "trainer/cuda/bias_grad.h"

namespace dmlp::testing {

inline std::vector<float> BiasGradInKernelOrder(const std::vector<float>& delta, int64_t rows, int64_t cols) {
  const int64_t chunk_rows = cuda::kBiasGradRowsPerChunk;
  std::vector<float> out(cols);
  for (int64_t col = 0; col < cols; ++col) {
    float total = 0.0f;
    for (int64_t first = 0; first < rows; first += chunk_rows) {
      float lanes[8];
      for (int64_t lane = 0; lane < 8; ++lane) {
        float sum = 0.0f;
        for (int64_t row = first + lane; row < std::min(rows, first + chunk_rows); row += 8)
          sum += delta[row * cols + col];
        lanes[lane] = sum;
      }
      for (int half = 4; half > 0; half /= 2)
        for (int lane = 0; lane < half; ++lane) lanes[lane] += lanes[lane + half];
      total = first == 0 ? lanes[0] : total + lanes[0];
    }
    out[col] = total;
  }
  return out;
}

}  // namespace dmlp::testing
