#include "trainer/cuda/mlp_cuda.h"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "common/format/error_codes.h"
#include "trainer/cuda/bias_grad.h"
#include "trainer/cuda/softmax_xent.h"

namespace dmlp::cuda {

Result<CudaMlp> CudaMlp::Create(const StateLayout& layout, int64_t shard_size,
                                const DeviceGemm* gemm, cudaStream_t stream) {
  if (shard_size < 1) return Status::Error(kModelInvalid, "shard size must be >= 1");
  const ModelShape& shape = layout.shape();
  for (int64_t dim : {shard_size, shape.features, shape.width, shape.classes}) {
    if (dim > INT_MAX)
      return Status::Error(kModelInvalid,
                           "GEMM dimension " + std::to_string(dim) + " exceeds INT32_MAX");
  }
  CudaMlp mlp;
  mlp.layout_ = layout;
  mlp.shard_size_ = shard_size;
  mlp.gemm_ = gemm;
  mlp.stream_ = stream;
  int64_t widest = 0;
  for (int64_t layer = 0; layer < layout.dense_count(); ++layer) {
    DMLP_ASSIGN_OR_RETURN(DeviceBuffer<float> output,
                          DeviceBuffer<float>::Create(size_t(shard_size * layout.fan_out(layer))));
    mlp.outputs_.push_back(std::move(output));
    widest = std::max(widest, layout.fan_out(layer));
  }
  const size_t delta_floats = static_cast<size_t>(shard_size * widest);
  DMLP_ASSIGN_OR_RETURN(mlp.delta_, DeviceBuffer<float>::Create(delta_floats));
  DMLP_ASSIGN_OR_RETURN(mlp.delta_below_, DeviceBuffer<float>::Create(delta_floats));
  DMLP_ASSIGN_OR_RETURN(mlp.row_loss_, DeviceBuffer<float>::Create(size_t(shard_size)));
  return mlp;
}

Status CudaMlp::ShardGradient(const float* params, const float* inputs, const int32_t* labels,
                              int64_t global_batch, float* grad, float* loss_sum) {
  DMLP_RETURN_IF_ERROR(Forward(params, inputs));
  DMLP_RETURN_IF_ERROR(SoftmaxCrossEntropy(outputs_.back().get(), labels, shard_size_,
                                           layout_.shape().classes, global_batch, delta_.get(),
                                           row_loss_.get(), loss_sum, stream_));
  return Backward(params, inputs, grad);
}

Status CudaMlp::Forward(const float* params, const float* inputs) {
  const int n = static_cast<int>(shard_size_);
  const float* below = inputs;
  for (int64_t layer = 0; layer < layout_.dense_count(); ++layer) {
    const int in = static_cast<int>(layout_.fan_in(layer));
    const int out = static_cast<int>(layout_.fan_out(layer));
    const float* kernel = params + layout_.kernel(layer).offset;
    const float* bias = params + layout_.bias(layer).offset;
    float* y = outputs_[layer].get();
    // y = below . kernel, then + bias (+ ReLU): flax Dense's dot, then add
    // (two roundings), as the CPU's epilogue (gemm_epilogue.h) applies them.
    const bool hidden = layer + 1 < layout_.dense_count();
    DMLP_RETURN_IF_ERROR(gemm_->Sgemm(false, false, n, out, in, below, in, kernel, out, y, out,
                                      hidden ? GemmEpilogue::AddBiasRelu(bias)
                                             : GemmEpilogue::AddBias(bias)));
    below = y;
  }
  return Status::Ok();
}

Status CudaMlp::Backward(const float* params, const float* inputs, float* grad) {
  const int n = static_cast<int>(shard_size_);
  for (int64_t layer = layout_.dense_count() - 1; layer >= 0; --layer) {
    const int in = static_cast<int>(layout_.fan_in(layer));
    const int out = static_cast<int>(layout_.fan_out(layer));
    const float* below = layer == 0 ? inputs : outputs_[layer - 1].get();
    // Kernel gradient: below^T . delta (in x out).
    DMLP_RETURN_IF_ERROR(gemm_->Sgemm(true, false, in, out, n, below, in, delta_.get(), out,
                                      grad + layout_.kernel(layer).offset, out));
    // Bias gradient: column sums in sample order, the CPU's (bias_grad.h).
    DMLP_RETURN_IF_ERROR(BiasGradient(delta_.get(), n, out, grad + layout_.bias(layer).offset, stream_));
    if (layer == 0) break;
    // Through the kernel (delta . kernel^T, n x in), then through the ReLU
    // below: zero where its output is not positive, the CPU's epilogue.
    const float* kernel = params + layout_.kernel(layer).offset;
    DMLP_RETURN_IF_ERROR(gemm_->Sgemm(false, true, n, in, out, delta_.get(), out, kernel, out,
                                      delta_below_.get(), in,
                                      GemmEpilogue::MaskByPositive(below, static_cast<size_t>(in))));
    std::swap(delta_, delta_below_);
  }
  return Status::Ok();
}

double CudaMlp::GemmFlops() const {
  double flops = 0;
  for (int64_t layer = 0; layer < layout_.dense_count(); ++layer) {
    const double mnk =
        static_cast<double>(shard_size_) * layout_.fan_in(layer) * layout_.fan_out(layer);
    // forward, kernel gradient, and (above layer 0) the delta through the kernel
    flops += 2 * mnk * (layer == 0 ? 2 : 3);
  }
  return flops;
}

}  // namespace dmlp::cuda
