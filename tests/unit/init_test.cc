// Initial parameters: flax's truncated-normal fan_in kernels and zero biases,
// from the Philox definition, placed by the canonical layout's offsets.
#include "trainer/init.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "trainer/philox.h"
#include "trainer/sample_math.h"

namespace dmlp {
namespace {

StateLayout Layout(int64_t features, int64_t width, int64_t layers, int64_t classes) {
  Result<StateLayout> layout = StateLayout::Create({features, width, layers, classes});
  EXPECT_TRUE(layout.ok()) << layout.status().ToString();
  return *layout;
}

std::vector<float> Init(const StateLayout& layout, uint64_t seed) {
  std::vector<float> params(layout.parameter_count(), -1.0f);
  EXPECT_TRUE(InitParams(layout, seed, params.data()).ok());
  return params;
}

TEST(InitTest, ScaleIsFlaxFanInTruncatedNormal) {
  EXPECT_EQ(KernelInitScale(4), static_cast<float>(0.5 / 0.87962566103423978));
  EXPECT_EQ(KernelInitScale(1), static_cast<float>(1.0 / 0.87962566103423978));
  EXPECT_EQ(KernelInitScale(512), static_cast<float>(std::sqrt(1.0 / 512) / 0.87962566103423978));
}

TEST(InitTest, KernelsAreTruncatedWithVarianceOneOverFanIn) {
  const StateLayout layout = Layout(256, 512, 1, 10);
  const std::vector<float> params = Init(layout, 7);
  for (int64_t layer = 0; layer < layout.dense_count(); ++layer) {
    const StateLeaf& kernel = layout.kernel(layer);
    const float scale = KernelInitScale(layout.fan_in(layer));
    const PhiloxKey key = PhiloxKeyFromSeed(7);
    double sum = 0, sum2 = 0;
    for (size_t e = 0; e < kernel.size; ++e) {
      const float v = params[kernel.offset + e];
      ASSERT_LT(std::fabs(v), 2.0f * scale) << kernel.name << "[" << e << "]";
      // InitParams' chunked loop against the one-element definition (this
      // size has ~6000 rejected z0 and ~260 rejected z0 and z1).
      ASSERT_EQ(FloatBits(v), FloatBits(InitKernelValue(key, uint32_t(e), uint32_t(layer), scale)));
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
  EXPECT_NE(Init(layout, 123 + (uint64_t{1} << 32)), a);  // the key's high word counts
}

TEST(InitTest, ElevenLayersPlacedByLayerIndexNotLeafOrder) {
  // Dense_10 sorts between Dense_1 and Dense_2; its values still come from
  // counter word 1 = 10 and its fan_in is WIDTH.
  const StateLayout layout = Layout(3, 4, 10, 2);
  ASSERT_LT(layout.kernel(10).offset, layout.kernel(2).offset);
  const std::vector<float> params = Init(layout, 99);
  const PhiloxKey key = PhiloxKeyFromSeed(99);
  for (int64_t layer = 0; layer < layout.dense_count(); ++layer) {
    const StateLeaf& kernel = layout.kernel(layer);
    ASSERT_EQ(kernel.shape, (std::vector<int64_t>{layout.fan_in(layer), layout.fan_out(layer)}));
    const float scale = KernelInitScale(layout.fan_in(layer));
    for (size_t e = 0; e < kernel.size; ++e)
      EXPECT_EQ(FloatBits(params[kernel.offset + e]),
                FloatBits(InitKernelValue(key, uint32_t(e), uint32_t(layer), scale)))
          << kernel.name << "[" << e << "]";
  }
}

TEST(InitTest, GoldenValues) {
  // SEED=42, FEATURES=3 WIDTH=4 LAYERS=1 CLASSES=2: Dense_0/kernel [3][4], then
  // Dense_1/kernel [4][2]; a few elements each.
  const StateLayout layout = Layout(3, 4, 1, 2);
  const std::vector<float> params = Init(layout, 42);
  const float* k0 = params.data() + layout.kernel(0).offset;
  const float* k1 = params.data() + layout.kernel(1).offset;
  EXPECT_EQ(FloatBits(k0[0]), 0xbf2304dau);
  EXPECT_EQ(FloatBits(k0[7]), 0xbf49aea0u);
  EXPECT_EQ(FloatBits(k0[11]), 0xbf67ac4cu);
  EXPECT_EQ(FloatBits(k1[0]), 0xbf6e0fcau);
  EXPECT_EQ(FloatBits(k1[5]), 0xbe962bfau);
}

TEST(InitTest, RejectionSkipsValuesOutsideTwo) {
  // Find elements whose first normal is outside (-2, 2); the value must be the
  // next one inside, in the order z0, z1, z2, z3, then the next attempt.
  const PhiloxKey key = PhiloxKeyFromSeed(5);
  int rejected = 0;
  for (uint32_t e = 0; e < 2000; ++e) {
    const PhiloxBlock words = Philox4x32_10(PhiloxBlock{e, 0, 0, 0}, key);
    float z[4];
    NormalPair(words, 0, &z[0], &z[1]);
    NormalPair(words, 1, &z[2], &z[3]);
    float expected = NAN;
    for (float v : z)
      if (std::fabs(v) < 2.0f) { expected = v; break; }
    if (std::isnan(expected)) continue;  // all four outside: next attempt, not checked here
    if (std::fabs(z[0]) >= 2.0f) ++rejected;
    EXPECT_EQ(FloatBits(InitTruncatedNormal(key, e, 0)), FloatBits(expected)) << e;
  }
  EXPECT_GT(rejected, 50);  // ~4.6% of 2000
}

TEST(InitTest, KernelOf2To32ElementsIsRejected) {
  const StateLayout layout = Layout(65536, 65536, 1, 1);
  const Status status = InitParams(layout, 0, nullptr);  // fails before writing
  EXPECT_EQ(status.code(), "MODEL_INVALID");
  EXPECT_EQ(status.ToString(),
            "MODEL_INVALID: Dense_0/kernel has 4294967296 elements; init needs fewer than 2^32");
}

}  // namespace
}  // namespace dmlp
