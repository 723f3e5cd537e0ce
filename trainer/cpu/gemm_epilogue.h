// defines: GemmEpilogue, ApplyGemmEpilogue
//
// The MLP's element-wise steps that follow a GEMM (bias, ReLU, the ReLU's
// derivative), applied by the GEMM to each tile of C right after the tile's
// last k-block, while it is in L1, instead of by a pass over the whole of C
// later (from L2 or L3, with a barrier of its own): bench/cpu_floor measured
// the separate passes at about 3 % of an update on train_bench.py's shapes.
//
// Bits: each element's step reads that element of C, its column's bias or its
// own mask element, and is one IEEE-rounded add, a compare or a select, so
// applying it tile by tile gives the bits of the separate pass whatever the
// tiles, kernels or threads (tests/unit/ordered_sgemm_test.cc holds every kernel
// to the pass written as a plain loop).
#pragma once

#include <cstddef>

namespace dmlp {

struct GemmEpilogue {
  enum class Kind {
    kNone,
    kAddBias,         // C[i][j] = C[i][j] + bias[j]: a Dense layer's bias
    kAddBiasRelu,     // then jax.nn.relu, max(x, 0): NaN passes through, -0 becomes +0
    kMaskByPositive,  // C[i][j] = mask[i][j] > 0 ? C[i][j] : 0: through the ReLU whose
                      // output is `mask` (jax.nn.relu's derivative: 0 at 0, below and at NaN)
  };
  Kind kind = Kind::kNone;
  const float* bias = nullptr;  // kAddBias, kAddBiasRelu: one value per column of C
  const float* mask = nullptr;  // kMaskByPositive: one value per element of C,
  size_t mask_stride = 0;       //   row i at mask + i * mask_stride

  /// The same steps for the block of C whose first element is C[i0][j0], as its (0, 0).
  GemmEpilogue At(int i0, int j0) const {
    return {kind, bias ? bias + j0 : nullptr, mask ? mask + static_cast<size_t>(i0) * mask_stride + j0 : nullptr,
            mask_stride};
  }

  static GemmEpilogue None() { return {}; }
  static GemmEpilogue AddBias(const float* bias) { return {Kind::kAddBias, bias, nullptr, 0}; }
  static GemmEpilogue AddBiasRelu(const float* bias) { return {Kind::kAddBiasRelu, bias, nullptr, 0}; }
  static GemmEpilogue MaskByPositive(const float* mask, size_t stride) {
    return {Kind::kMaskByPositive, nullptr, mask, stride};
  }
};

/// Applies `epilogue` to the rows x cols block at c (row stride ldc), whose first
/// element is the epilogue's (0, 0) (GemmEpilogue::At places it).
void ApplyGemmEpilogue(const GemmEpilogue& epilogue, int rows, int cols, float* c, size_t ldc);

}  // namespace dmlp
