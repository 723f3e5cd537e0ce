// Each of the CUDA platform's own kernels against a CPU reference. Bit-equal
// where the kernel promises the CPU's bits (bias+ReLU, ReLU backward, the
// ordered fold, Adam); otherwise within the tolerance stated at the test,
// plus run-to-run bit equality (softmax cross-entropy, bias gradient).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_test_util.h"
#include "tests/unit/bias_grad_order.h"
#include "trainer/cpu/adam_cpu.h"
#include "trainer/cuda/adam_update.h"
#include "trainer/cuda/bias_grad.h"
#include "trainer/cuda/bias_relu.h"
#include "trainer/cuda/fold.h"
#include "trainer/cuda/softmax_xent.h"
#include "trainer/math/ordered_reduce.h"

namespace dmlp {
namespace {

using testing::BiasGradInCpuOrder;
using testing::PoisonedDevice;
using testing::RandomFloats;
using testing::SameBits;
using testing::ToDevice;
using testing::ToHost;

// The loss sum's documented order (softmax_xent.cu): 256 strided partial sums, then a tree.
float LossSumInKernelOrder(const std::vector<float>& row_loss) {
  std::vector<float> partial(cuda::kLossSumThreads, 0.0f);
  for (size_t t = 0; t < partial.size(); ++t)
    for (size_t row = t; row < row_loss.size(); row += partial.size()) partial[t] += row_loss[row];
  for (size_t stride = partial.size() / 2; stride > 0; stride /= 2)
    for (size_t t = 0; t < stride; ++t) partial[t] += partial[t + stride];
  return partial[0];
}

TEST(CudaBiasRelu, ForwardBitEqualToCpuLoop) {
  DMLP_REQUIRE_GPU();
  const int64_t rows = 37, cols = 300;
  std::vector<float> y = RandomFloats(rows * cols, 1);
  const std::vector<float> bias = RandomFloats(cols, 2);
  y[0] = std::numeric_limits<float>::quiet_NaN();  // NaN passes through ReLU (jax.nn.relu)
  y[1] = -bias[1];                                 // exact zero
  y[2] = -0.0f;
  for (bool relu : {false, true}) {
    std::vector<float> expected = y;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        float value = expected[i * cols + j] + bias[j];
        if (relu && !(value > 0.0f || value != value)) value = 0.0f;
        expected[i * cols + j] = value;
      }
    }
    auto device_y = ToDevice(y);
    auto device_bias = ToDevice(bias);
    DMLP_ASSERT_OK(
        cuda::BiasReluForward(device_y.get(), device_bias.get(), rows, cols, relu, nullptr));
    const std::vector<float> got = ToHost(device_y.get(), y.size());
    EXPECT_TRUE(SameBits(got, expected)) << "relu=" << relu;
    EXPECT_TRUE(std::isnan(got[0]));
  }
}

TEST(CudaBiasRelu, BackwardZeroesWhereActivationNotPositive) {
  DMLP_REQUIRE_GPU();
  const std::vector<float> delta = RandomFloats(1000, 3);
  std::vector<float> activation = RandomFloats(1000, 4);
  activation[5] = 0.0f;
  activation[6] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> expected = delta;
  for (size_t e = 0; e < delta.size(); ++e)
    if (!(activation[e] > 0.0f)) expected[e] = 0.0f;
  auto device_delta = ToDevice(delta);
  auto device_activation = ToDevice(activation);
  DMLP_ASSERT_OK(cuda::ReluBackward(device_delta.get(), device_activation.get(),
                                    static_cast<int64_t>(delta.size()), nullptr));
  EXPECT_TRUE(SameBits(ToHost(device_delta.get(), delta.size()), expected));
}

// Tolerance: CUDA's expf/logf are within 2 ulp of the true value (glibc's
// within 1), so each dlogit and per-sample loss is checked against a double
// reference to 1e-5 relative (dlogits scaled by 1/BATCH). The loss sum's
// order is the kernel's documented tree: bit-equal to replaying it on the host.
TEST(CudaSoftmaxXent, MatchesCpuReferenceAndRepeatsBits) {
  DMLP_REQUIRE_GPU();
  for (int64_t classes : {1, 10, 1000}) {
    const int64_t rows = 700, batch = 2800;
    const std::vector<float> logits = RandomFloats(rows * classes, 5, 3.0f);
    std::vector<int32_t> labels(rows);
    for (int64_t i = 0; i < rows; ++i) labels[i] = static_cast<int32_t>((i * 7919) % classes);
    // The CPU platform's formulas (trainer/cpu/mlp_cpu.cc), in double.
    std::vector<double> expected_d(rows * classes), expected_loss(rows);
    for (int64_t i = 0; i < rows; ++i) {
      const float* z = &logits[i * classes];
      double row_max = z[0];
      for (int64_t j = 1; j < classes; ++j) row_max = std::max<double>(row_max, z[j]);
      double sum = 0;
      for (int64_t j = 0; j < classes; ++j) sum += std::exp(z[j] - row_max);
      expected_loss[i] = std::log(sum) - (z[labels[i]] - row_max);
      for (int64_t j = 0; j < classes; ++j)
        expected_d[i * classes + j] =
            (std::exp(z[j] - row_max) / sum - (j == labels[i] ? 1.0 : 0.0)) / batch;
    }
    auto device_logits = ToDevice(logits);
    auto device_labels = ToDevice(labels);
    auto dlogits = PoisonedDevice<float>(logits.size());
    auto row_loss = PoisonedDevice<float>(rows);
    auto loss_sum = PoisonedDevice<float>(1);
    std::vector<float> first_d, first_loss;
    for (int run = 0; run < 2; ++run) {
      DMLP_ASSERT_OK(cuda::SoftmaxCrossEntropy(device_logits.get(), device_labels.get(), rows,
                                               classes, batch, dlogits.get(), row_loss.get(),
                                               loss_sum.get(), nullptr));
      const std::vector<float> got_d = ToHost(dlogits.get(), logits.size());
      const std::vector<float> got_rows = ToHost(row_loss.get(), rows);
      const std::vector<float> got_loss = ToHost(loss_sum.get(), 1);
      if (run == 0) {
        for (int64_t i = 0; i < rows * classes; ++i)
          ASSERT_NEAR(got_d[i], expected_d[i], 1e-5 / batch + 1e-5 * std::abs(expected_d[i]))
              << "classes=" << classes << " element " << i;
        for (int64_t i = 0; i < rows; ++i)
          ASSERT_NEAR(got_rows[i], expected_loss[i], 1e-5 * std::abs(expected_loss[i]) + 1e-6)
              << "classes=" << classes << " row " << i;
        EXPECT_EQ(got_loss[0], LossSumInKernelOrder(got_rows)) << "classes=" << classes;
        first_d = got_d;
        first_loss = got_loss;
      } else {
        EXPECT_TRUE(SameBits(got_d, first_d));
        EXPECT_TRUE(SameBits(got_loss, first_loss));
      }
    }
  }
}

// Bit-equal to the CPU platform's order replayed on the host, and (a check of
// the order's sense) within the worst-case bound of a float sum of that depth
// of a double reference: rows * 2^-24 * sum|terms|.
TEST(CudaBiasGrad, BitEqualToTheCpuOrder) {
  DMLP_REQUIRE_GPU();
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1},
                            {255, 3},
                            {256, 33},
                            {1000, 37},
                            {4096, 2048},
                            {70000, 10}}) {
    const std::vector<float> delta = RandomFloats(rows * cols, 6);
    auto device_delta = ToDevice(delta);
    auto out = PoisonedDevice<float>(cols);
    DMLP_ASSERT_OK(cuda::BiasGradient(device_delta.get(), rows, cols, out.get(), nullptr));
    const std::vector<float> got = ToHost(out.get(), cols);
    EXPECT_TRUE(SameBits(got, BiasGradInCpuOrder(delta, rows, cols))) << rows << "x" << cols;
    const double depth = double(rows);
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t i = 0; i < rows; ++i) {
        sum += delta[i * cols + j];
        magnitude += std::abs(delta[i * cols + j]);
      }
      ASSERT_NEAR(got[j], sum, depth * 0x1p-24 * magnitude)
          << rows << "x" << cols << " column " << j;
    }
  }
}

// The promise: the device fold adds exactly as FoldShardsInOrder (bit-equal).
// Values of very different magnitudes make any other order visible.
TEST(CudaFold, BitEqualToFoldShardsInOrder) {
  DMLP_REQUIRE_GPU();
  for (auto [shards, stride, length] : {std::tuple<size_t, size_t, size_t>{1, 10, 10},
                                        {3, 1000, 999},
                                        {8, 4161, 4097},
                                        {16, 1 << 16, (1 << 16) - 5}}) {
    std::vector<float> partials = RandomFloats(shards * stride, 7);
    for (size_t e = 0; e < partials.size(); e += 3) partials[e] *= 1e7f;
    std::vector<float> expected(length);
    FoldShardsInOrder(partials.data(), shards, stride, length, expected.data());
    auto device_partials = ToDevice(partials);
    auto out = PoisonedDevice<float>(length);
    DMLP_ASSERT_OK(cuda::FoldShardsOnDevice(device_partials.get(), shards, stride, length,
                                            out.get(), nullptr));
    EXPECT_TRUE(SameBits(ToHost(out.get(), length), expected))
        << shards << " shards, stride " << stride;
  }
}

// The promise: AdamElement on the device gives the host's bits.
TEST(CudaAdam, BitEqualToHostAdamUpdate) {
  DMLP_REQUIRE_GPU();
  const size_t count = 100003;
  std::vector<float> params = RandomFloats(count, 8);
  std::vector<float> mu = RandomFloats(count, 9, 1e-3f);
  std::vector<float> nu = RandomFloats(count, 10, 1e-3f);
  for (float& value : nu) value = value * value;
  auto device_params = ToDevice(params);
  auto device_mu = ToDevice(mu);
  auto device_nu = ToDevice(nu);
  auto count_slot = PoisonedDevice<int32_t>(1);
  int32_t adam_count = 0;
  for (int update = 0; update < 4; ++update) {
    std::vector<float> grad = RandomFloats(count, 11 + update, 1e-2f);
    grad[0] = 0.0f;
    grad[1] = -0.0f;
    grad[2] = 1e-30f;
    adam_count = update == 3 ? INT32_MAX : AdamNextCount(adam_count);  // also the saturated count
    const AdamScalars scalars = MakeAdamScalars(adam_count, update == 2 ? 0.1 : 1e-3);
    AdamUpdate(scalars, grad.data(), params.data(), mu.data(), nu.data(), count);
    auto device_grad = ToDevice(grad);
    DMLP_ASSERT_OK(cuda::AdamUpdateOnDevice(scalars, device_grad.get(), device_params.get(),
                                            device_mu.get(), device_nu.get(), count,
                                            count_slot.get(), adam_count, nullptr));
    EXPECT_TRUE(SameBits(ToHost(device_params.get(), count), params)) << "update " << update;
    EXPECT_TRUE(SameBits(ToHost(device_mu.get(), count), mu)) << "update " << update;
    EXPECT_TRUE(SameBits(ToHost(device_nu.get(), count), nu)) << "update " << update;
    EXPECT_EQ(ToHost(count_slot.get(), 1)[0], adam_count);
  }
}

}  // namespace
}  // namespace dmlp
