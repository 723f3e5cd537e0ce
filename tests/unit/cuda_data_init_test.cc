// Data and initial parameters generated on the GPU are bit-identical to the
// CPU platform's (trainer/math/data.h GenerateSamples, trainer/math/init.h InitParams).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cuda_test_util.h"
#include "trainer/cuda/data_gen.h"
#include "trainer/cuda/init_gen.h"
#include "trainer/math/data.h"
#include "trainer/math/init.h"

namespace dmlp {
namespace {

using testing::PoisonedDevice;
using testing::SameBits;
using testing::ToHost;

void ExpectSamplesMatch(const SampleSpec& spec, int64_t step, int64_t microbatch, int64_t begin,
                        int64_t end) {
  const size_t rows = static_cast<size_t>(end - begin);
  std::vector<float> cpu_inputs(rows * spec.features);
  std::vector<int32_t> cpu_labels(rows);
  GenerateSamples(spec, step, microbatch, begin, end, cpu_inputs.data(), cpu_labels.data());
  auto inputs = PoisonedDevice<float>(cpu_inputs.size());
  auto labels = PoisonedDevice<int32_t>(rows);
  DMLP_ASSERT_OK(cuda::GenerateSamplesOnDevice(spec, step, microbatch, begin, end, inputs.get(),
                                               labels.get(), nullptr));
  EXPECT_TRUE(SameBits(ToHost(inputs.get(), cpu_inputs.size()), cpu_inputs))
      << "features=" << spec.features << " step=" << step << " begin=" << begin;
  EXPECT_EQ(ToHost(labels.get(), rows), cpu_labels) << "classes=" << spec.classes;
}

TEST(CudaDataGen, BitIdenticalToCpu) {
  DMLP_REQUIRE_GPU();
  // Feature counts with every remainder mod 4, 8 and 16 (the host's vector lanes), the spec's 512.
  for (int64_t features : {1, 2, 3, 4, 5, 7, 33, 512}) {
    ExpectSamplesMatch({42, features, 10}, 1, 0, 0, 64);
  }
  ExpectSamplesMatch({0, 16, 1}, 3, 7, 100, 131);  // one class, odd range
  ExpectSamplesMatch({0xFFFFFFFFu, 9, 1000}, 4000000000, 1, 4096, 4160);
  ExpectSamplesMatch({7, 512, 10}, 20, 7, 2048, 4096);  // the spec's second half
}

TEST(CudaInitGen, BitIdenticalToCpu) {
  DMLP_REQUIRE_GPU();
  // 11 Dense layers, so "Dense_10" sorts before "Dense_2" in the canonical layout.
  for (const ModelShape& shape :
       {ModelShape{5, 7, 2, 3}, ModelShape{3, 4, 10, 2}, ModelShape{512, 256, 3, 10}}) {
    auto layout = StateLayout::Create(shape);
    ASSERT_TRUE(layout.ok());
    const size_t count = layout->parameter_count();
    for (uint32_t seed : {0u, 42u, 0x80000000u, 0xFFFFFFFFu}) {
      std::vector<float> cpu(count);
      DMLP_ASSERT_OK(InitParams(*layout, seed, cpu.data()));
      auto params = PoisonedDevice<float>(count);
      DMLP_ASSERT_OK(cuda::InitParamsOnDevice(*layout, seed, params.get(), nullptr));
      EXPECT_TRUE(SameBits(ToHost(params.get(), count), cpu))
          << "layers=" << shape.layers << " seed=" << seed;
    }
  }
}

}  // namespace
}  // namespace dmlp
