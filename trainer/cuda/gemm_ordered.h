// defines: OrderedGemm
//
// GEMM=ordered: every GEMM of the CUDA platform through dmlp's ordered SGEMM
// (ordered_sgemm.h), each element of C the CPU platform's FMA chain, the
// epilogue fused as the CPU fuses it. Nothing here depends on the GPU model or
// on a library version, so result.json records the kind alone.
#pragma once

#include <cuda_runtime_api.h>

#include "trainer/cuda/device_gemm.h"

namespace dmlp::cuda {

class OrderedGemm final : public DeviceGemm {
 public:
  /// REQUIRES: `stream` outlives this object.
  explicit OrderedGemm(cudaStream_t stream) : stream_(stream) {}

  Status Sgemm(bool transpose_a, bool transpose_b, int m, int n, int k, const float* a, int lda,
               const float* b, int ldb, float* c, int ldc,
               const GemmEpilogue& epilogue = GemmEpilogue::None()) const override;
  nlohmann::json Description() const override { return {{"kind", "ordered"}}; }

 private:
  cudaStream_t stream_;
};

}  // namespace dmlp::cuda
