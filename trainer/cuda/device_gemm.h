// defines: DeviceGemm
//
// The CUDA platform's GEMM as trainer/cuda/mlp_cuda.cc calls it, with the CPU
// platform's row-major signature and epilogue (trainer/cpu/gemm_epilogue.h), so
// mlp_cuda.cc reads like trainer/cpu/mlp_cpu.cc. Two implementations, chosen by
// the plan's GEMM: OrderedGemm (gemm_ordered.h), the CPU's bits on any GPU,
// and CublasGemm (gemm_cublas.h), cuBLAS's order (absent from a build with
// DMLP_CUDA_VENDOR_LIBRARIES=OFF, vendor_libraries.h).
//
// C++17: included by no .cu file today, but kept to what nvcc 11.8 accepts
// like every header of this folder (the GPU simulator's toolkit).
#pragma once

#include <cuda_runtime_api.h>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "trainer/cpu/gemm_epilogue.h"

namespace dmlp::cuda {

class DeviceGemm {
 public:
  virtual ~DeviceGemm() = default;

  /// Row-major C[m x n] = E(op(A) op(B)), op(X) = X^T when transposed, E the
  /// epilogue; lda/ldb/ldc are row strides (alpha 1, beta 0). Device pointers
  /// (the epilogue's bias and mask too); enqueued on the stream the GEMM is bound to.
  /// REQUIRES: C does not alias A, B or the epilogue's bias and mask.
  /// (Every override repeats the default, so a call through any type means the same.)
  virtual Status Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, const float* a,
                       int lda, const float* b, int ldb, float* c, int ldc,
                       const GemmEpilogue& epilogue = GemmEpilogue::None()) const = 0;

  /// result.json's fingerprint.gemm: {"kind": "ordered"}, or cuBLAS's kind,
  /// version, compute type and workspace, everything that picks its kernels.
  virtual nlohmann::json Description() const = 0;
};

}  // namespace dmlp::cuda
