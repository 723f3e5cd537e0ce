// defines: CpuGemmInfo, InitCpuGemm, CpuGemmDescription, Sgemm, BlisPathBesideExecutable
//
// The CPU platform's only GEMM entry point. The library behind it is chosen by
// measurement (bench/gemm_select): BLIS 0.9 (OpenMP build), loaded from its
// exact file, with its sub-configuration (micro-kernel) pinned explicitly
// instead of BLIS's own CPU-model guess, and its thread count set.
//
// Determinism: the same call gives the same bits on every run, and, because
// BLIS only parallelizes the m and n loops (never k, so every element of C is
// accumulated in the same order with the same k blocking), the same bits for
// every thread count; tests/unit/gemm_cpu_test.cc checks both. The kernel does
// change bits, which is why it is pinned and recorded.
//
// Row-major, like the rest of dmlp: C[M x N] = alpha * op(A) * op(B) + beta * C.
#pragma once

#include <string>

#include "common/status.h"

namespace dmlp {

struct CpuGemmInfo {
  std::string library;  // "blis 0.9.0 openmp"
  std::string kernel;   // the pinned BLIS sub-configuration: "skx", "haswell" or "generic"
  int threads = 1;      // threads one GEMM call uses
  std::string file;     // the BLIS file loaded, as a real path
};

/// Loads and pins the library, kernel and thread count (GEMM_INIT_FAILED when it cannot).
/// `threads` <= 0 means every CPU this process may run on. Call before starting threads
/// (it sets BLIS_ARCH_TYPE in the environment for BLIS's initialization, then restores it).
/// A second call may change the thread count; the kernel stays.
Status InitCpuGemm(int threads);
/// What InitCpuGemm pinned (for result.json's fingerprint). Empty before InitCpuGemm.
const CpuGemmInfo& CpuGemmDescription();

/// Where a relocatable build looks for BLIS: `relative` (e.g. "../lib/libblis.so.4") taken
/// from the folder of `executable` (an absolute `relative` is returned as it is).
std::string BlisPathBesideExecutable(const std::string& executable, const std::string& relative);

/// Row-major SGEMM. REQUIRES: InitCpuGemm succeeded; m, n, k >= 0; lda/ldb/ldc are row
/// strides of the stored matrices, each >= max(1, stored columns). Violations abort.
void Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
           const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace dmlp
