// defines: SoftmaxCrossEntropy
//
// Softmax cross-entropy with integer labels, forward and backward in one pass,
// as optax.softmax_cross_entropy_with_integer_labels followed by the mean's
// 1/BATCH: each sample the CPU platform's chain (trainer/math/softmax_xent_row.h,
// the same function), the losses summed in the CPU's order, so losses,
// gradients and the loss sum are the CPU platform's bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/status.h"

namespace dmlp::cuda {

/// For each of `rows` samples: l_i = log(sum_j exp(z_ij - max_i)) - (z_i,label - max_i),
/// dlogits_ij = (softmax_ij - [j == label_i]) / global_batch. Writes row_loss[i] = l_i and
/// *loss_sum = sum_i l_i (in sample order from +0, as the CPU). All device pointers; enqueued on
/// `stream`. REQUIRES: labels in [0, classes); dlogits does not alias logits.
Status SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t rows,
                           int64_t classes, int64_t global_batch, float* dlogits, float* row_loss,
                           float* loss_sum, cudaStream_t stream);

}  // namespace dmlp::cuda
