// defines: GemmShape, MlpGemmShapes, ShapeResult, RunGemmWorker
//
// The measuring half of bench/gemm_select: one process loads exactly one BLAS
// (dlopen of the exact .so, after its selection variables are in the
// environment, because OpenBLAS reads OPENBLAS_CORETYPE in its load-time
// constructor), reports the kernel the library says it picked, and times and
// hashes every shape. The driver (gemm_select.cc) runs one worker per
// (candidate, threads, round) so no library state leaks between measurements.
#pragma once

#include <string>
#include <vector>

namespace dmlp::bench {

/// One row-major GEMM: C[m x n] = op(A) * op(B), op(A) is m x k.
struct GemmShape {
  std::string name;  // e.g. "n512 W2048 L1 fwd"
  int m = 0;
  int n = 0;
  int k = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  bool speed = true;  // false: odd sizes there only for the bit-stability checks
};

/// The MLP's GEMMs (batch shard {64,512}, FEATURES 512, WIDTH {1024,2048},
/// CLASSES 10; forward, dX, dW per layer) plus odd sizes for the bit checks.
std::vector<GemmShape> MlpGemmShapes();

/// What a worker prints per shape, one line:
/// "shape <index> <gflops> <cpu_gflops> <hash> <repeat_ok> <layout_ok>".
struct ShapeResult {
  double gflops = 0;       // by wall-clock time of the median call
  double cpu_gflops = 0;   // by the process's CPU time (all threads) of the median call
  std::string hash;        // FNV-1a 64 of C's bytes, hex
  bool repeat_ok = false;  // every timed call gave the same bytes
  bool layout_ok = false;  // misaligned buffers and padded leading dims gave the same bytes
};

/// Worker entry: argv is {library, kernel, threads}. Prints "kernel ...", "threads ...",
/// "library ..." and one "shape" line per MlpGemmShapes() entry to stdout; returns an exit code.
int RunGemmWorker(const std::string& library, const std::string& kernel, int threads);

}  // namespace dmlp::bench
