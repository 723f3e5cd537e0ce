// The epilogue's loops (gemm_epilogue.h), plain array loops that -O3 vectorizes
// across columns, each compiled per ISA (trainer/math/cpu_clones.h): one add, a
// compare and a select per element, so the vector width changes no bit. (The
// AVX-512 micro-kernel applies the same steps to its full tiles in registers,
// trainer/cpu/ordered_sgemm_kernels.h; C never aliases the bias or the mask.)
#include "trainer/cpu/gemm_epilogue.h"

#include "trainer/math/cpu_clones.h"

namespace dmlp {
namespace {

DMLP_CPU_CLONES
void AddBias(const float* __restrict bias, int rows, int cols, float* __restrict block, size_t ldc) {
  for (int i = 0; i < rows; ++i) {
    float* row = block + static_cast<size_t>(i) * ldc;
    for (int j = 0; j < cols; ++j) row[j] = row[j] + bias[j];
  }
}

DMLP_CPU_CLONES
void AddBiasRelu(const float* __restrict bias, int rows, int cols, float* __restrict block, size_t ldc) {
  for (int i = 0; i < rows; ++i) {
    float* row = block + static_cast<size_t>(i) * ldc;
    for (int j = 0; j < cols; ++j) {
      const float v = row[j] + bias[j];
      row[j] = v <= 0.0f ? 0.0f : v;
    }
  }
}

DMLP_CPU_CLONES
void MaskByPositive(const float* __restrict mask, size_t mask_stride, int rows, int cols, float* __restrict block,
                    size_t ldc) {
  for (int i = 0; i < rows; ++i) {
    float* row = block + static_cast<size_t>(i) * ldc;
    const float* positive = mask + static_cast<size_t>(i) * mask_stride;
    for (int j = 0; j < cols; ++j) row[j] = positive[j] > 0.0f ? row[j] : 0.0f;
  }
}

}  // namespace

void ApplyGemmEpilogue(const GemmEpilogue& epilogue, int rows, int cols, float* c, size_t ldc) {
  switch (epilogue.kind) {
    case GemmEpilogue::Kind::kNone: return;
    case GemmEpilogue::Kind::kAddBias: return AddBias(epilogue.bias, rows, cols, c, ldc);
    case GemmEpilogue::Kind::kAddBiasRelu: return AddBiasRelu(epilogue.bias, rows, cols, c, ldc);
    case GemmEpilogue::Kind::kMaskByPositive:
      return MaskByPositive(epilogue.mask, epilogue.mask_stride, rows, cols, c, ldc);
  }
}

}  // namespace dmlp
