// defines: GemmIsa, kGemmOrder, kGemmKBlock, GemmIsaName, GemmIsaSupported, OrderedSgemm
//
// dmlp's own SGEMM, whose bits do not depend on the CPU: the same inputs give
// the same C on every x86-64 (AVX-512, AVX2 + FMA, or none), with any thread
// count, tile or vector width. THE ORDER RULE (kGemmOrder), which every kernel
// here obeys and tests/unit/ordered_sgemm_test.cc checks bit for bit:
//
//   S[i][j] = +0;  for k = 0, 1, ..., K-1:  S = fma(A[i][k], B[k][j], S)
//   C[i][j] = alpha * S                       when beta == 0 (C is never read)
//   C[i][j] = alpha * S + beta * C[i][j]      otherwise (two products, one add:
//                                             three roundings, no fusion)
//
// so each element of C is one chain of once-rounded FMAs in increasing k,
// started at +0 (never peeled into a plain multiply: a product can be -0 where
// fma(a, b, +0) is +0). How the code gets there, none of which changes a bit:
//   - vectors run across j (and registers across i), or, for a C of few
//     columns, the other way round (the transposed problem S^T = op(B)^T op(A)^T,
//     fma's product being the same either way), never along k: no split-k,
//     no paired accumulators, no horizontal sums;
//   - k is cut into equal blocks of at most kGemmKBlock; each continues from the running
//     value (C loaded into the accumulators), never "zero, sum the block, add";
//   - packing copies A and B as they are: padding only along i and j (lanes
//     that are computed and thrown away), never along k (Inf * 0 = NaN);
//   - alpha and beta are applied once, after the chain, never folded into packing;
//   - threads split C into blocks of rows and columns, never k: a block's
//     k-blocks run one after the other, each from the running value the last
//     left in C, on whichever thread takes it (which thread computes what may
//     change from call to call; the chains may not);
//   - MXCSR is set to round-to-nearest with flush-to-zero and denormals-are-zero
//     off in every thread that runs a kernel (hardware FMA obeys them, a
//     software fmaf does not), and restored afterwards;
//   - the file is compiled with -ffp-contract=off, never -ffast-math.
// Same bits hold for every finite and infinite input; NaN payloads may differ.
#pragma once

#include <cstddef>

#include "trainer/cpu/gemm_epilogue.h"

namespace dmlp {

/// The accumulation order above, as the fingerprint records it (fingerprint.blas.kernel).
inline constexpr const char* kGemmOrder = "fma-chain-k-ascending";
/// The k-block: a speed setting only (each block continues from the running value).
inline constexpr int kGemmKBlock = 256;

/// The micro-kernels: all give the same bits; they differ in speed and in the CPU they need.
enum class GemmIsa { kScalar, kAvx2, kAvx512 };

const char* GemmIsaName(GemmIsa isa);  // "scalar", "avx2", "avx512"
/// Whether this CPU (and OS) runs the kernel: avx512 needs AVX-512F, avx2 needs AVX2 and FMA.
bool GemmIsaSupported(GemmIsa isa);

/// Row-major C[m x n] = E(alpha * op(A) * op(B) + beta * C) by the order rule, with
/// `threads` threads (OpenMP; 1: the calling thread only), E the epilogue
/// (gemm_epilogue.h; fused into the tiles when alpha = 1 and beta = 0). op(A)
/// is m x k: A is stored m x k (row stride lda) or, transposed, k x m. op(B)
/// is k x n likewise.
/// REQUIRES: GemmIsaSupported(isa); m, n, k >= 0; strides >= the stored columns;
/// C does not alias A, B or the epilogue's bias and mask.
void OrderedSgemm(GemmIsa isa, int threads, bool transpose_a, bool transpose_b, int m, int n, int k,
                  float alpha, const float* a, size_t lda, const float* b, size_t ldb, float beta,
                  float* c, size_t ldc, const GemmEpilogue& epilogue = GemmEpilogue::None());

}  // namespace dmlp
