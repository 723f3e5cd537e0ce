// defines: SoftmaxXentRow
//
// One sample's softmax cross-entropy with an integer label, forward and
// backward, as optax.softmax_cross_entropy_with_integer_labels and the mean's
// 1/BATCH: the one chain both platforms run, the CPU's loop over its shard
// (trainer/cpu/mlp_cpu.cc) and the CUDA kernel's thread per sample
// (trainer/cuda/softmax_xent.cu). One definition, so their losses and
// gradients are equal bit for bit: every operation is one IEEE-rounded
// FAdd/FSub/FDiv (never fused, trainer/math/device_macros.h), and exp and log
// are dmlp's own (trainer/math/exp_log.h), the same bits on host and device.
#pragma once

#include <cstdint>

#include "trainer/math/device_macros.h"
#include "trainer/math/exp_log.h"

namespace dmlp {

/// Writes d[j] = (softmax(z)_j - [j == label]) / batch for j < classes and returns the
/// loss log(sum_j exp(z_j - max)) - (z_label - max). REQUIRES: classes >= 1,
/// 0 <= label < classes; d does not alias z.
DMLP_HOST_DEVICE DMLP_INLINE float SoftmaxXentRow(const float* z, int32_t label, int64_t classes,
                                                  float batch, float* d) {
  // optax's order: shift by the row max (exp of the shifted logits is in
  // (0, 1], their sum in [1, classes]), then the sum in class order from +0.
  float row_max = z[0];
  for (int64_t j = 1; j < classes; ++j)
    if (z[j] > row_max) row_max = z[j];
  float sum = 0.0f;
  for (int64_t j = 0; j < classes; ++j) {
    d[j] = ExpF(FSub(z[j], row_max));
    sum = FAdd(sum, d[j]);
  }
  const float loss = FSub(LogF(sum), FSub(z[label], row_max));
  // d loss / d z_j = softmax_j - [j == label]; the mean divides by the batch.
  for (int64_t j = 0; j < classes; ++j)
    d[j] = FDiv(FSub(FDiv(d[j], sum), j == label ? 1.0f : 0.0f), batch);
  return loss;
}

}  // namespace dmlp
