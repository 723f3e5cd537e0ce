#include "trainer/cpu/mlp_cpu.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "common/format/error_codes.h"
#include "trainer/cpu/cpu_parallel.h"
#include "trainer/cpu/gemm_cpu.h"
#include "trainer/math/cpu_clones.h"
#include "trainer/math/softmax_xent_row.h"

namespace dmlp {
namespace {

// The bias, ReLU and ReLU-derivative steps run inside the GEMMs, on each tile
// of C as it finishes (trainer/cpu/gemm_epilogue.h). The column sums below are
// a plain array loop that -O3 vectorizes (trainer/cpu/CMakeLists.txt), compiled per ISA
// (trainer/math/cpu_clones.h): one IEEE-rounded add each, so the vector width
// changes only the speed, never a bit. Sums stay in sample order: the vector
// lanes run across columns, never along a sum. They run on the rank's threads
// (ParallelRanges) in pieces of whole columns: each sum whole on one thread.

// sums[j] = ((d[0][j] + d[1][j]) + d[2][j]) + ...: column sums in row order,
// for `cols` columns of a matrix whose rows are `stride` long.
DMLP_CPU_CLONES
void SumColumnsInRowOrder(const float* d, int rows, int stride, int cols, float* sums) {
  for (int j = 0; j < cols; ++j) sums[j] = 0.0f;
  for (int i = 0; i < rows; ++i) {
    const float* row = d + static_cast<size_t>(i) * stride;
    for (int j = 0; j < cols; ++j) sums[j] = sums[j] + row[j];
  }
}

// Pieces of the column sums: 64 columns.
constexpr size_t kColumnGrain = 64;

}  // namespace

Result<CpuMlp> CpuMlp::Create(const StateLayout& layout, int64_t shard_size) {
  if (shard_size < 1) return Status::Error(kModelInvalid, "shard size must be >= 1");
  const ModelShape& shape = layout.shape();
  for (int64_t dim : {shard_size, shape.features, shape.width, shape.classes}) {
    if (dim > INT_MAX)
      return Status::Error(kModelInvalid, "GEMM dimension " + std::to_string(dim) +
                                                " exceeds INT32_MAX");
  }
  return CpuMlp(layout, shard_size);
}

CpuMlp::CpuMlp(const StateLayout& layout, int64_t shard_size)
    : layout_(layout), shard_size_(shard_size) {
  int64_t widest = 0;
  for (int64_t layer = 0; layer < layout_.dense_count(); ++layer) {
    outputs_.emplace_back(static_cast<size_t>(shard_size * layout_.fan_out(layer)));
    widest = std::max(widest, layout_.fan_out(layer));
  }
  delta_.resize(static_cast<size_t>(shard_size * widest));
  delta_below_.resize(delta_.size());
}

float CpuMlp::ShardGradient(const float* params, const float* inputs, const int32_t* labels,
                            int64_t global_batch, float* grad) {
  Forward(params, inputs);
  const float loss_sum = SoftmaxCrossEntropy(outputs_.back().data(), labels, global_batch);
  Backward(params, inputs, grad);
  return loss_sum;
}

void CpuMlp::Forward(const float* params, const float* inputs) {
  const int n = static_cast<int>(shard_size_);
  const float* below = inputs;
  for (int64_t layer = 0; layer < layout_.dense_count(); ++layer) {
    const int in = static_cast<int>(layout_.fan_in(layer));
    const int out = static_cast<int>(layout_.fan_out(layer));
    const float* kernel = params + layout_.kernel(layer).offset;
    const float* bias = params + layout_.bias(layer).offset;
    float* y = outputs_[layer].data();
    // y = below . kernel, then + bias: flax Dense's dot, then add (two
    // roundings), then for a hidden layer jax.nn.relu; the GEMM applies the
    // last two to each tile of y as it finishes (gemm_epilogue.h).
    const bool hidden = layer + 1 < layout_.dense_count();
    Sgemm(false, false, n, out, in, 1.0f, below, in, kernel, out, 0.0f, y, out,
          hidden ? GemmEpilogue::AddBiasRelu(bias) : GemmEpilogue::AddBias(bias));
    below = y;
  }
}

float CpuMlp::SoftmaxCrossEntropy(const float* logits, const int32_t* labels,
                                  int64_t global_batch) {
  // One row at a time, the chain the CUDA kernel runs too (trainer/math/softmax_xent_row.h:
  // dmlp's own exp and log, glibc's bits), the losses summed in sample order
  // from +0: the platforms' losses, gradients and loss sums are equal bit for bit.
  const int64_t classes = layout_.shape().classes;
  const float batch = static_cast<float>(global_batch);
  float loss_sum = 0.0f;
  for (int64_t i = 0; i < shard_size_; ++i)
    loss_sum += SoftmaxXentRow(logits + i * classes, labels[i], classes, batch,
                               delta_.data() + i * classes);
  return loss_sum;
}

void CpuMlp::Backward(const float* params, const float* inputs, float* grad) {
  const int n = static_cast<int>(shard_size_);
  for (int64_t layer = layout_.dense_count() - 1; layer >= 0; --layer) {
    const int in = static_cast<int>(layout_.fan_in(layer));
    const int out = static_cast<int>(layout_.fan_out(layer));
    const float* below = layer == 0 ? inputs : outputs_[layer - 1].data();
    // Kernel gradient: below^T . delta (in x out).
    Sgemm(true, false, in, out, n, 1.0f, below, in, delta_.data(), out, 0.0f,
          grad + layout_.kernel(layer).offset, out);
    // Bias gradient: column sums, each in sample order 0, 1, ..., n-1 (on
    // pieces of whole columns: every sum stays on one thread).
    const float* delta = delta_.data();
    float* bias_grad = grad + layout_.bias(layer).offset;
    ParallelRanges(static_cast<size_t>(out), kColumnGrain, [=](size_t first, size_t last) {
      SumColumnsInRowOrder(delta + first, n, out, static_cast<int>(last - first), bias_grad + first);
    });
    if (layer == 0) break;
    // Through the kernel: delta . kernel^T (n x in), then through the ReLU
    // below: zero where its output is not positive (jax.nn.relu's derivative
    // is 0 at 0), which the GEMM applies to each tile as it finishes.
    const float* kernel = params + layout_.kernel(layer).offset;
    Sgemm(false, true, n, in, out, 1.0f, delta_.data(), out, kernel, out, 0.0f,
          delta_below_.data(), in, GemmEpilogue::MaskByPositive(below, static_cast<size_t>(in)));
    std::swap(delta_, delta_below_);
  }
}

}  // namespace dmlp
