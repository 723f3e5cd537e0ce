// Initial parameters: flax's model.init of the reference MLP, bit for bit,
// against the real flax (tests/data/jax_vectors.tsv): lecun_normal kernels
// (truncated normal times jax's float32 stddev) and zero biases, placed by the
// canonical layout's offsets.
#include "trainer/math/init.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "jax_vectors.h"
#include "trainer/math/sample_math.h"

namespace dmlp {
namespace {

using testing::ParseFloatBits;
using testing::ParseU32;
using testing::ParseU64;
using testing::ReadJaxVectors;

StateLayout Layout(int64_t features, int64_t width, int64_t layers, int64_t classes) {
  Result<StateLayout> layout = StateLayout::Create({features, width, layers, classes});
  EXPECT_TRUE(layout.ok()) << layout.status().ToString();
  return *layout;
}

std::vector<float> Init(const StateLayout& layout, uint32_t seed) {
  std::vector<float> params(layout.parameter_count(), -1.0f);
  EXPECT_TRUE(InitParams(layout, seed, params.data()).ok());
  return params;
}

TEST(InitTest, StddevIsJaxsFloat32Arithmetic) {
  const auto records = ReadJaxVectors("jax_vectors.tsv", "stddev");
  ASSERT_GE(records.size(), 70u);
  for (const auto& r : records)
    EXPECT_EQ(FloatBits(LecunNormalStddev(int64_t(ParseU64(r[1])))), ParseFloatBits(r[2]).at(0))
        << "fan_in " << r[1];
}

TEST(InitTest, FlaxDenseHashIsSha1OfTheScopeNameAndCounter) {
  // SHA-1("Dense_0\x01") = b2b71315...; jax_vectors' init records check every layer used.
  EXPECT_EQ(FlaxDenseHash(0), 0xb2b71315u);
  EXPECT_NE(FlaxDenseHash(1), FlaxDenseHash(10));
}

TEST(InitTest, ParamsAreFlaxs) {
  // Three models, up to 4 Dense layers, SEEDs 5, 2^31 and 2^32 - 1; every leaf, every bit.
  const auto records = ReadJaxVectors("jax_vectors.tsv", "init");
  ASSERT_GE(records.size(), 16u);
  for (const auto& r : records) {
    const StateLayout layout = Layout(int64_t(ParseU64(r[2])), int64_t(ParseU64(r[3])),
                                      int64_t(ParseU64(r[4])), int64_t(ParseU64(r[5])));
    const std::vector<float> params = Init(layout, ParseU32(r[1]));
    const std::vector<uint32_t> expected = ParseFloatBits(r[7]);
    bool found = false;
    for (const StateLeaf& leaf : layout.leaves()) {
      if (leaf.name != r[6]) continue;
      found = true;
      ASSERT_EQ(leaf.size, expected.size()) << r[6];
      for (size_t e = 0; e < leaf.size; ++e)
        ASSERT_EQ(FloatBits(params[leaf.offset + e]), expected[e])
            << "seed " << r[1] << " " << r[6] << "[" << e << "]";
    }
    EXPECT_TRUE(found) << r[6];
  }
}

TEST(InitTest, KernelsAreTruncatedWithVarianceOneOverFanIn) {
  const StateLayout layout = Layout(256, 512, 1, 10);
  const std::vector<float> params = Init(layout, 7);
  for (int64_t layer = 0; layer < layout.dense_count(); ++layer) {
    const StateLeaf& kernel = layout.kernel(layer);
    const float stddev = LecunNormalStddev(layout.fan_in(layer));
    const JaxKey key = DenseKernelKey(InitKey(7), FlaxDenseHash(layer));
    double sum = 0, sum2 = 0;
    for (size_t e = 0; e < kernel.size; ++e) {
      const float v = params[kernel.offset + e];
      ASSERT_LT(std::fabs(v), 2.0f * stddev) << kernel.name << "[" << e << "]";
      // InitParams' vector loops against the one-element definition (the CUDA kernel's).
      ASSERT_EQ(FloatBits(v), FloatBits(FMul(JaxTruncatedNormalFromBits(JaxBits32(key, e)), stddev)));
      sum += v;
      sum2 += double(v) * v;
    }
    const double n = double(kernel.size);
    const double variance = sum2 / n - (sum / n) * (sum / n);
    // 131072 and 5120 draws: relative standard error of the variance ~0.3% and ~1.6%.
    EXPECT_NEAR(variance * layout.fan_in(layer), 1.0, kernel.size > 100000 ? 0.015 : 0.07)
        << kernel.name;
    const StateLeaf& bias = layout.bias(layer);
    for (size_t e = 0; e < bias.size; ++e) EXPECT_EQ(FloatBits(params[bias.offset + e]), 0u);
  }
}

TEST(InitTest, DeterministicAndSeedDependent) {
  const StateLayout layout = Layout(5, 6, 2, 3);
  const std::vector<float> a = Init(layout, 123), b = Init(layout, 123);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  EXPECT_NE(Init(layout, 124), a);
}

TEST(InitTest, ElevenLayersPlacedByLayerIndexNotLeafOrder) {
  // Dense_10 sorts between Dense_1 and Dense_2; its values still come from the
  // key of the name "Dense_10" and its fan_in is WIDTH.
  const StateLayout layout = Layout(3, 4, 10, 2);
  ASSERT_LT(layout.kernel(10).offset, layout.kernel(2).offset);
  const std::vector<float> params = Init(layout, 99);
  for (int64_t layer = 0; layer < layout.dense_count(); ++layer) {
    const StateLeaf& kernel = layout.kernel(layer);
    ASSERT_EQ(kernel.shape, (std::vector<int64_t>{layout.fan_in(layer), layout.fan_out(layer)}));
    const JaxKey key = DenseKernelKey(InitKey(99), FlaxDenseHash(layer));
    const float stddev = LecunNormalStddev(layout.fan_in(layer));
    for (size_t e = 0; e < kernel.size; ++e)
      EXPECT_EQ(FloatBits(params[kernel.offset + e]),
                FloatBits(FMul(JaxTruncatedNormalFromBits(JaxBits32(key, e)), stddev)))
          << kernel.name << "[" << e << "]";
  }
}

}  // namespace
}  // namespace dmlp
