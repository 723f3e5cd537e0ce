// defines: CpuMlp
//
// Forward and backward of the MLP for one data shard on the CPU platform:
// LAYERS x (Dense(WIDTH) + ReLU), then Dense(CLASSES), softmax cross-entropy.
// Every GEMM goes through trainer/cpu/gemm_cpu.h's Sgemm (pinned kernel and thread
// count: same call, same bits); every other sum here runs in a fixed order in
// this file's loops, so the same inputs always give the same bits.
// Parameters and gradients are in the canonical layout (common/state_layout.h):
// kernel [in][out] row-major, bias [out].
#pragma once

#include <cstdint>
#include <vector>

#include "common/state_layout.h"
#include "common/status.h"

namespace dmlp {

class CpuMlp {
 public:
  /// Owns every workspace for shards of `shard_size` samples (no allocation per call).
  /// MODEL_INVALID when shard_size < 1 or a GEMM dimension exceeds INT32_MAX.
  static Result<CpuMlp> Create(const StateLayout& layout, int64_t shard_size);

  /// Loss and gradient of one shard. inputs: shard_size x FEATURES row-major;
  /// labels: shard_size values in [0, CLASSES). Writes into `grad` (P floats,
  /// canonical layout) the exact gradient of (sum_i l_i) / global_batch, with
  /// l_i = logsumexp(z_i) - z_i[y_i], z_i the logits; returns sum_i l_i summed
  /// in float32 in sample order (the shard's partial loss sum, not a mean).
  /// REQUIRES: InitCpuGemm succeeded; global_batch >= 1; grad does not alias the rest.
  float ShardGradient(const float* params, const float* inputs, const int32_t* labels,
                      int64_t global_batch, float* grad);

  int64_t shard_size() const { return shard_size_; }

 private:
  CpuMlp(const StateLayout& layout, int64_t shard_size);
  /// Writes logits' gradients into delta_ and returns the loss sum.
  float SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t global_batch);
  void Forward(const float* params, const float* inputs);
  void Backward(const float* params, const float* inputs, float* grad);

  StateLayout layout_;
  int64_t shard_size_ = 0;
  // outputs_[k]: shard_size x fan_out(k) after Dense k (+ ReLU for hidden layers);
  // the last holds the logits.
  std::vector<std::vector<float>> outputs_;
  // d(loss)/d(pre-activation) of the current layer and of the one below it,
  // shard_size x max(WIDTH, CLASSES) each, rows packed at the layer's width.
  std::vector<float> delta_, delta_below_;
};

}  // namespace dmlp
