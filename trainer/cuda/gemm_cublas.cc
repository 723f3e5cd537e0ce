#include "trainer/cuda/gemm_cublas.h"

#include <cublas_v2.h>

#include "common/format/error_codes.h"
#include "trainer/cuda/bias_relu.h"
#include "trainer/cuda/cublas_check.h"

namespace dmlp::cuda {

void CublasGemm::HandleDeleter::operator()(cublasContext* handle) const {
  (void)cublasDestroy(handle);
}

Result<CublasGemm> CublasGemm::Create(cudaStream_t stream, bool tf32) {
  CublasGemm gemm;
  cublasHandle_t handle = nullptr;
  CUBLAS_CHECK(cublasCreate(&handle));
  gemm.handle_.reset(handle);
  DMLP_ASSIGN_OR_RETURN(gemm.workspace_, DeviceBuffer<uint8_t>::Create(kCublasWorkspaceBytes));
  // cublasSetStream resets the workspace to the library's pool, so the stream first.
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  CUBLAS_CHECK(cublasSetWorkspace(handle, gemm.workspace_.get(), gemm.workspace_.bytes()));
  // Atomics would make split-K style reductions order-dependent.
  CUBLAS_CHECK(cublasSetAtomicsMode(handle, CUBLAS_ATOMICS_NOT_ALLOWED));
  CUBLAS_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  // The compute type passed to every cublasGemmEx decides the precision; the
  // default math mode adds nothing to it (no TF32 behind CUBLAS_COMPUTE_32F).
  CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  gemm.compute_type_ = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  DMLP_ASSIGN_OR_RETURN(gemm.version_, LibraryVersion());
  return gemm;
}

Status CublasGemm::Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, const float* a,
                         int lda, const float* b, int ldb, float* c, int ldc,
                         const GemmEpilogue& epilogue) const {
  if (m < 1 || n < 1 || k < 1) return Status::Error(kInternal, "Sgemm: empty shape");
  const bool masks = epilogue.kind == GemmEpilogue::Kind::kMaskByPositive;
  if (epilogue.kind != GemmEpilogue::Kind::kNone &&
      (ldc != n || (masks && epilogue.mask_stride != static_cast<size_t>(n))))
    return Status::Error(kInternal, "Sgemm: an epilogue needs packed rows of C (and of the mask)");
  // Row-major X with row stride ld is column-major X^T with leading dimension
  // ld. So row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T:
  // swap the operands and the m/n roles; each keeps its own transpose flag.
  const float alpha = 1.0f;
  const float beta = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(handle_.get(), transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                            transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_32F,
                            ldb, a, CUDA_R_32F, lda, &beta, c, CUDA_R_32F, ldc, compute_type_,
                            CUBLAS_GEMM_DEFAULT));
  cudaStream_t stream = nullptr;
  CUBLAS_CHECK(cublasGetStream(handle_.get(), &stream));
  switch (epilogue.kind) {
    case GemmEpilogue::Kind::kNone: return Status::Ok();
    case GemmEpilogue::Kind::kAddBias:
    case GemmEpilogue::Kind::kAddBiasRelu:
      return BiasReluForward(c, epilogue.bias, m, n, epilogue.kind == GemmEpilogue::Kind::kAddBiasRelu,
                             stream);
    case GemmEpilogue::Kind::kMaskByPositive:
      return ReluBackward(c, epilogue.mask, int64_t{m} * n, stream);
  }
  return Status::Error(kInternal, "Sgemm: unknown epilogue");
}

nlohmann::json CublasGemm::Description() const {
  return {{"kind", "cublas"},
          {"version", version_},
          {"compute_type", compute_type_name()},
          {"workspace_bytes", kCublasWorkspaceBytes}};
}

const char* CublasGemm::compute_type_name() const {
  return compute_type_ == CUBLAS_COMPUTE_32F_FAST_TF32 ? "CUBLAS_COMPUTE_32F_FAST_TF32"
                                                       : "CUBLAS_COMPUTE_32F";
}

Result<std::string> CublasGemm::LibraryVersion() {
  int major = 0, minor = 0, patch = 0;
  CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
  CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
  CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace dmlp::cuda
