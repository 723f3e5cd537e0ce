// defines: CublasGemm, kCublasWorkspaceBytes
//
// GEMM=cublas (device_gemm.h): the CUDA platform's GEMMs through cuBLAS, the
// epilogue by this platform's element-wise kernels after it (bias_relu.h),
// which give the epilogue's bits. One handle bound to one stream, a fixed user-owned
// workspace, atomics not allowed and an explicit compute type: cuBLAS then
// gives the same bits for the same call on GPUs of the same model and SM
// count with the same library version (cuBLAS documentation, "Results
// reproducibility"), which is the bit promise of docs/determinism.md.
// Compiled only with DMLP_CUDA_VENDOR_LIBRARIES=ON (vendor_libraries.h).
#pragma once

#include <cublas_v2.h>  // not cublas_api.h: see cuda_check.h
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

#include "common/status.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/device_gemm.h"

namespace dmlp::cuda {

/// 32 MiB: what cuBLAS recommends for Hopper (4 MiB elsewhere); fixed so the
/// algorithm choice cannot depend on what memory happened to be free.
inline constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

class CublasGemm final : public DeviceGemm {
 public:
  /// A handle on the current device bound to `stream`. tf32: CUBLAS_COMPUTE_32F_FAST_TF32
  /// (TF32 tensor cores, as JAX's GPU default); otherwise CUBLAS_COMPUTE_32F (full fp32).
  static Result<CublasGemm> Create(cudaStream_t stream, bool tf32);

  /// DeviceGemm::Sgemm. INTERNAL for an epilogue on a C whose rows are not
  /// packed (ldc != n) or a mask whose rows are not (the kernels take whole arrays).
  Status Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, const float* a, int lda,
               const float* b, int ldb, float* c, int ldc,
               const GemmEpilogue& epilogue = GemmEpilogue::None()) const override;
  /// {"kind": "cublas", "version", "compute_type", "workspace_bytes"}.
  nlohmann::json Description() const override;

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
  std::string version_;  // LibraryVersion(), asked once by Create
};

}  // namespace dmlp::cuda
