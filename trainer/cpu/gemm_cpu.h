// defines: CpuGemmInfo, InitCpuGemm, CpuGemmDescription, Sgemm, BlisPathBesideExecutable
// (the choice itself, CpuGemm with ParseCpuGemm and CpuGemmOrder: trainer/cpu_gemm_choice.h)
//
// The CPU platform's only GEMM entry point, chosen by DMLP_CPU_GEMM:
//   auto (default)        dmlp's own SGEMM (trainer/cpu/ordered_sgemm.h) with the
//   avx512, avx2, scalar  fastest kernel this CPU runs, or the one named. All
//                         give the same bits on every x86-64: one order rule.
//   blis                  BLIS 0.9 (OpenMP build), loaded from its exact file with
//                         its sub-configuration pinned by instruction set; kept
//                         for comparison (bench/cpu_floor). Its bits follow the
//                         sub-configuration, so it is another order.
//
// Determinism: the same call gives the same bits on every run and for every
// thread count (tests/unit/gemm_cpu_test.cc, tests/unit/ordered_sgemm_test.cc).
// What decides the bits is CpuGemmOrder, in the plan's fingerprint
// (common/bit_settings.h); the kernel that ran is recorded apart, as no bit.
//
// Row-major, like the rest of dmlp: C[M x N] = alpha * op(A) * op(B) + beta * C.
#pragma once

#include <string>

#include "common/status.h"
#include "trainer/cpu/gemm_epilogue.h"
#include "trainer/cpu_gemm_choice.h"

namespace dmlp {

struct CpuGemmInfo {
  std::string library;  // "dmlp ordered sgemm" or "blis 0.9.0 openmp"
  std::string kernel;   // the order (CpuGemmOrder): decides bits
  std::string isa;      // the micro-kernel that runs: "avx512", "avx2", "scalar", BLIS's "skx"...
  int threads = 1;      // threads one GEMM call uses
  std::string file;     // blis: the BLIS file loaded, as a real path; else ""
};

/// Selects the GEMM and its thread count (GEMM_INIT_FAILED when it cannot).
/// `threads` <= 0 means every CPU this process may run on. Call before starting
/// threads (blis sets BLIS_ARCH_TYPE in the environment for BLIS's
/// initialization, then restores it); ranks run as threads of one process (the
/// tests) may call it at once with the same settings, and only the first writes. A later call may change the thread count
/// and choose another of dmlp's kernels; once BLIS is loaded its sub-configuration stays.
/// REQUIRES: `choice` came from ParseCpuGemm on this CPU (a kernel it runs).
Status InitCpuGemm(int threads, CpuGemm choice = CpuGemm::kAuto);
/// What InitCpuGemm pinned (for result.json's fingerprint). Empty before InitCpuGemm.
const CpuGemmInfo& CpuGemmDescription();

/// Where a relocatable build looks for BLIS: `relative` (e.g. "../lib/libblis.so.4") taken
/// from the folder of `executable` (an absolute `relative` is returned as it is).
std::string BlisPathBesideExecutable(const std::string& executable, const std::string& relative);

/// Row-major SGEMM by the selected GEMM, then `epilogue` on every element of C
/// (gemm_epilogue.h: dmlp's kernels fuse it into their tiles; after BLIS it is
/// a pass over C on the calling thread). REQUIRES: InitCpuGemm succeeded; m, n,
/// k >= 0; lda/ldb/ldc are row strides of the stored matrices, each >= max(1,
/// stored columns). Violations abort.
void Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha,
           const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc,
           const GemmEpilogue& epilogue = GemmEpilogue::None());

}  // namespace dmlp
