// defines: CublasGemm, kCublasWorkspaceBytes
//
// The CUDA platform's only GEMM entry point, with the CPU platform's row-major
// signature (trainer/cpu/gemm_cpu.h) so trainer/cuda/mlp_cuda.cc reads like
// trainer/cpu/mlp_cpu.cc. One handle bound to one stream, a fixed user-owned
// workspace, atomics not allowed and an explicit compute type: cuBLAS then
// gives the same bits for the same call on GPUs of the same model and SM
// count with the same library version (cuBLAS documentation, "Results
// reproducibility"), which is the bit promise of docs/determinism.md.
#pragma once

#include <cublas_v2.h>  // not cublas_api.h: see cuda_check.h
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

#include "common/status.h"
#include "trainer/cuda/device_buffer.h"

namespace dmlp::cuda {

/// 32 MiB: what cuBLAS recommends for Hopper (4 MiB elsewhere); fixed so the
/// algorithm choice cannot depend on what memory happened to be free.
inline constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

class CublasGemm {
 public:
  /// A handle on the current device bound to `stream`. tf32: CUBLAS_COMPUTE_32F_FAST_TF32
  /// (TF32 tensor cores, as JAX's GPU default); otherwise CUBLAS_COMPUTE_32F (full fp32).
  static Result<CublasGemm> Create(cudaStream_t stream, bool tf32);

  /// Row-major C[m x n] = op(A) op(B), op(X) = X^T when transposed; lda/ldb/ldc
  /// are row strides (alpha 1, beta 0). Device pointers; enqueued on the stream.
  Status Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, const float* a, int lda,
               const float* b, int ldb, float* c, int ldc) const;

  /// "CUBLAS_COMPUTE_32F" or "CUBLAS_COMPUTE_32F_FAST_TF32".
  const char* compute_type_name() const;
  /// The cuBLAS library version, "13.1.0".
  static Result<std::string> LibraryVersion();

 private:
  struct HandleDeleter {
    void operator()(cublasContext* handle) const;
  };
  std::unique_ptr<cublasContext, HandleDeleter> handle_;
  DeviceBuffer<uint8_t> workspace_;
  cublasComputeType_t compute_type_ = CUBLAS_COMPUTE_32F;
};

}  // namespace dmlp::cuda
