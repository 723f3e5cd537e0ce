#include "trainer/cuda/gemm_ordered.h"

#include <cstddef>

#include "trainer/cuda/ordered_sgemm.h"

namespace dmlp::cuda {

Status OrderedGemm::Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, const float* a,
                          int lda, const float* b, int ldb, float* c, int ldc,
                          const GemmEpilogue& epilogue) const {
  // alpha 1 and beta 0, as the CPU platform's GEMMs (trainer/cpu/mlp_cpu.cc):
  // the chain's sum times 1 is the sum, and C is never read.
  return OrderedSgemmCuda(transpose_a, transpose_b, m, n, k, 1.0f, a, static_cast<size_t>(lda), b,
                          static_cast<size_t>(ldb), 0.0f, c, static_cast<size_t>(ldc), epilogue,
                          stream_);
}

}  // namespace dmlp::cuda
