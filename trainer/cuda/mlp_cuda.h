// defines: CudaMlp
//
// Forward and backward of the MLP for one data shard on the GPU, step for step
// the algorithm of trainer/cpu/mlp_cpu.cc (CpuMlp): the GEMMs through the
// plan's DeviceGemm (device_gemm.h) with the CPU's epilogues (bias, ReLU, the
// ReLU's mask), everything else through this platform's kernels, all on one
// stream. Parameters and gradients in the canonical layout (kernel [in][out]
// row-major, bias [out]). GEMM=ordered: the CPU's GEMM bits on any GPU;
// GEMM=cublas: same inputs, same GPU model and libraries, same bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "common/state_layout.h"
#include "common/status.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/device_gemm.h"

namespace dmlp::cuda {

class CudaMlp {
 public:
  /// Owns every device workspace for shards of `shard_size` samples (nothing is
  /// allocated per call). MODEL_INVALID when shard_size < 1 or a GEMM dimension
  /// exceeds INT32_MAX. REQUIRES: `gemm` outlives this object and is bound to `stream`.
  static Result<CudaMlp> Create(const StateLayout& layout, int64_t shard_size,
                                const DeviceGemm* gemm, cudaStream_t stream);

  /// Enqueues the loss and gradient of one shard, as CpuMlp::ShardGradient:
  /// `grad` (P floats, canonical layout) gets the gradient of (sum_i l_i) /
  /// global_batch and `*loss_sum` the shard's loss sum. Device pointers: inputs
  /// shard_size x FEATURES, labels shard_size values in [0, CLASSES).
  Status ShardGradient(const float* params, const float* inputs, const int32_t* labels,
                       int64_t global_batch, float* grad, float* loss_sum);

  int64_t shard_size() const { return shard_size_; }
  /// Floating-point operations of one ShardGradient's GEMMs (2 m n k each).
  double GemmFlops() const;

 private:
  Status Forward(const float* params, const float* inputs);
  Status Backward(const float* params, const float* inputs, float* grad);

  StateLayout layout_;
  int64_t shard_size_ = 0;
  const DeviceGemm* gemm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  // outputs_[k]: shard_size x fan_out(k) after Dense k (+ ReLU when hidden); the last: logits.
  std::vector<DeviceBuffer<float>> outputs_;
  // d(loss)/d(pre-activation) of the current layer and the one below, rows packed at its width.
  DeviceBuffer<float> delta_, delta_below_;
  DeviceBuffer<float> row_loss_;           // shard_size per-sample losses
};

}  // namespace dmlp::cuda
