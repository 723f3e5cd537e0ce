// defines: CpuGemm, CpuGemmInfo
//
// The CPU platform's only GEMM entry point. The library behind it is chosen by
// measurement (bench/gemm_select, README "CPU GEMM"), with its kernel and
// thread count pinned so that the same call gives the same bits on every run.
// Row-major, like the rest of dmlp: C[M x N] = alpha * op(A) * op(B) + beta * C.
#pragma once

#include <string>

#include "common/status.h"

namespace dmlp {

struct CpuGemmInfo {
  std::string library;  // "openblas 0.3.21", "blis 0.9.0", ...
  std::string kernel;   // the pinned micro-kernel / core type, e.g. "SkylakeX"
  int threads = 1;      // threads one GEMM call uses
};

/// Pins library kernel and thread count. Call once per process before any Sgemm.
/// `threads` <= 0 means the library's pinned default for this platform.
Status InitCpuGemm(int threads);
/// What InitCpuGemm pinned (for result.json's fingerprint).
const CpuGemmInfo& CpuGemmDescription();

/// Row-major SGEMM. REQUIRES: InitCpuGemm succeeded; lda/ldb/ldc are row strides.
void Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
           const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace dmlp
