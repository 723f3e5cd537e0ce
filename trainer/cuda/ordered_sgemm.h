// defines: OrderedSgemmCuda, kOrderedSgemmTileM, kOrderedSgemmTileN, kOrderedSgemmTileK
//
// The CPU platform's SGEMM (trainer/cpu/ordered_sgemm.h) on the device, with
// the same bits on every GPU model: it obeys the CPU's ORDER RULE, each element
// of C one chain of once-rounded FMAs in increasing k from +0, then alpha and
// beta (three roundings, no fusion; C never read when beta == 0), then the
// epilogue (trainer/cpu/gemm_epilogue.h) as the CPU's plain loops define it.
// Unlike cuBLAS, whose order (split-k, tensor cores, tile sums) depends on the
// GPU model and the library version, nothing here depends on the device: the
// tile sizes below are speed settings only (ordered_sgemm.cu says why).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/status.h"
#include "trainer/cpu/gemm_epilogue.h"

namespace dmlp::cuda {

/// The block tile: rows and columns of C per thread block, and the depth of
/// the k tiles staged through shared memory. Speed settings only.
inline constexpr int kOrderedSgemmTileM = 64;
inline constexpr int kOrderedSgemmTileN = 64;
inline constexpr int kOrderedSgemmTileK = 16;

/// Row-major C[m x n] = E(alpha * op(A) * op(B) + beta * C) by the CPU's order
/// rule, bit for bit what OrderedSgemm gives for the same operands, E the
/// epilogue. op(A) is m x k: A is stored m x k (row stride lda) or, transposed,
/// k x m; op(B) is k x n likewise. Device pointers (the epilogue's bias and mask
/// too); enqueued on `stream`.
/// REQUIRES: C does not alias A, B or the epilogue's bias and mask.
/// INTERNAL on a negative size, a stride short of the stored columns, an
/// epilogue without its bias or mask, or a C too tall for one grid.
Status OrderedSgemmCuda(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
                        size_t lda, const float* b, size_t ldb, float beta, float* c, size_t ldc,
                        const GemmEpilogue& epilogue, cudaStream_t stream);

}  // namespace dmlp::cuda
