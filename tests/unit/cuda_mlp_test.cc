// The whole forward/backward of a shard on the GPU (CudaMlp) against the CPU
// platform's (CpuMlp), from the same parameters and the same data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda_test_util.h"
#include "trainer/cpu/gemm_cpu.h"
#include "trainer/cpu/mlp_cpu.h"
#include "trainer/cuda/gemm_ordered.h"
#include "trainer/cuda/mlp_cuda.h"
#include "trainer/math/data.h"
#include "trainer/math/init.h"

namespace dmlp {
namespace {

using testing::PoisonedDevice;
using testing::SameBits;
using testing::ToDevice;
using testing::ToHost;

struct ShardResult {
  std::vector<float> grad;
  float loss_sum = 0;
};

// Tolerance (fp32): per leaf, max |gpu - cpu| <= 1e-4 * max |cpu| of that
// leaf, and the loss sum to 1e-5 relative. Both platforms run fp32 GEMMs with
// different summation orders and different expf/logf, so agreement is to
// rounding, not bits; a wrong stride, transpose or layer order is off by O(1).
TEST(CudaMlp, ShardGradientMatchesCpuMlp) {
  DMLP_REQUIRE_GPU();
  ASSERT_TRUE(InitCpuGemm(1).ok());
  for (const ModelShape& shape :
       {ModelShape{33, 64, 2, 10}, ModelShape{16, 24, 0, 5}, ModelShape{8, 16, 10, 3}}) {
    auto layout = StateLayout::Create(shape);
    ASSERT_TRUE(layout.ok());
    const int64_t shard_size = 100, batch = 300;
    std::vector<float> params(layout->parameter_count());
    DMLP_ASSERT_OK(InitParams(*layout, 42, params.data()));
    // Non-zero biases, so bias handling is exercised.
    for (const StateLeaf& leaf : layout->leaves())
      if (!leaf.is_kernel)
        for (size_t i = 0; i < leaf.size; ++i)
          params[leaf.offset + i] = 0.01f * float(i % 7) - 0.03f;
    const SampleSpec spec{42, shape.features, shape.classes};
    std::vector<float> inputs(shard_size * shape.features);
    std::vector<int32_t> labels(shard_size);
    GenerateSamples(spec, 1, 0, 100, 200, inputs.data(), labels.data());

    auto cpu_mlp = CpuMlp::Create(*layout, shard_size);
    ASSERT_TRUE(cpu_mlp.ok());
    ShardResult cpu;
    cpu.grad.resize(params.size());
    cpu.loss_sum =
        cpu_mlp->ShardGradient(params.data(), inputs.data(), labels.data(), batch, cpu.grad.data());

    const cuda::OrderedGemm gemm(nullptr);
    auto gpu_mlp = cuda::CudaMlp::Create(*layout, shard_size, &gemm, nullptr);
    ASSERT_TRUE(gpu_mlp.ok()) << gpu_mlp.status().ToString();
    auto device_params = ToDevice(params);
    auto device_inputs = ToDevice(inputs);
    auto device_labels = ToDevice(labels);
    auto device_grad = PoisonedDevice<float>(params.size() + 1);  // + the loss slot
    std::vector<float> first;
    for (int run = 0; run < 2; ++run) {
      DMLP_ASSERT_OK(gpu_mlp->ShardGradient(device_params.get(), device_inputs.get(),
                                            device_labels.get(), batch, device_grad.get(),
                                            device_grad.get() + params.size()));
      const std::vector<float> got = ToHost(device_grad.get(), params.size() + 1);
      if (run == 1) {
        EXPECT_TRUE(SameBits(got, first)) << "same inputs, same bits";
        break;
      }
      first = got;
      for (const StateLeaf& leaf : layout->leaves()) {
        float largest = 0, worst = 0;
        for (size_t i = 0; i < leaf.size; ++i) {
          largest = std::max(largest, std::abs(cpu.grad[leaf.offset + i]));
          worst = std::max(worst, std::abs(got[leaf.offset + i] - cpu.grad[leaf.offset + i]));
        }
        EXPECT_LE(worst, 1e-4f * largest + 1e-12f)
            << leaf.name << " (layers=" << shape.layers << "), largest " << largest;
      }
      EXPECT_NEAR(got[params.size()], cpu.loss_sum, 1e-5 * std::abs(cpu.loss_sum));
    }
  }
}

TEST(CudaMlp, CreateRejectsBadShapes) {
  auto layout = StateLayout::Create({4, 8, 1, 3});
  ASSERT_TRUE(layout.ok());
  // Shape checks come before any CUDA call, so they run without a GPU too.
  auto empty = cuda::CudaMlp::Create(*layout, 0, nullptr, nullptr);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), "MODEL_INVALID");
  auto huge = cuda::CudaMlp::Create(*layout, int64_t{1} << 31, nullptr, nullptr);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), "MODEL_INVALID");
}

}  // namespace
}  // namespace dmlp
