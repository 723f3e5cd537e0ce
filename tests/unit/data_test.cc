// The data definition: the reference job's samples, bit for bit, against the
// real jax (tests/data/jax_vectors.tsv); samples depend only on (SEED, step,
// microbatch, index), never on how the batch is cut into ranks or shards;
// labels and features have the expected distributions.
#include "trainer/math/data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "jax_vectors.h"
#include "trainer/math/sample_math.h"

namespace dmlp {
namespace {

struct Batch {
  std::vector<float> inputs;
  std::vector<int32_t> labels;
};

Batch Generate(const SampleSpec& spec, int64_t step, int64_t microbatch, int64_t begin,
               int64_t end) {
  Batch batch{std::vector<float>((end - begin) * spec.features),
              std::vector<int32_t>(end - begin)};
  GenerateSamples(spec, step, microbatch, begin, end, batch.inputs.data(), batch.labels.data());
  return batch;
}

bool SameBytes(const Batch& a, const Batch& b) {
  return a.inputs.size() == b.inputs.size() && a.labels.size() == b.labels.size() &&
         std::memcmp(a.inputs.data(), b.inputs.data(), a.inputs.size() * 4) == 0 &&
         std::memcmp(a.labels.data(), b.labels.data(), a.labels.size() * 4) == 0;
}

TEST(DataTest, SampleBitsDoNotDependOnRanksOrShards) {
  const SampleSpec spec{20240531, 13, 7};  // FEATURES not a multiple of 4
  const int64_t batch = 48;
  const Batch whole = Generate(spec, 3, 2, 0, batch);
  // Every DATA_SHARDS (and so every NUM_PROCESSES dividing it) cuts [0, B)
  // into equal contiguous pieces; uneven cuts must agree as well.
  for (int64_t pieces : {1, 2, 3, 4, 6, 8, 12, 16, 24, 48}) {
    Batch joined;
    for (int64_t p = 0; p < pieces; ++p) {
      const Batch part = Generate(spec, 3, 2, p * batch / pieces, (p + 1) * batch / pieces);
      joined.inputs.insert(joined.inputs.end(), part.inputs.begin(), part.inputs.end());
      joined.labels.insert(joined.labels.end(), part.labels.begin(), part.labels.end());
    }
    EXPECT_TRUE(SameBytes(whole, joined)) << pieces << " pieces";
  }
  Batch uneven = Generate(spec, 3, 2, 0, 5);
  for (auto [begin, end] : {std::pair{5, 6}, {6, 29}, {29, 48}}) {
    const Batch part = Generate(spec, 3, 2, begin, end);
    uneven.inputs.insert(uneven.inputs.end(), part.inputs.begin(), part.inputs.end());
    uneven.labels.insert(uneven.labels.end(), part.labels.begin(), part.labels.end());
  }
  EXPECT_TRUE(SameBytes(whole, uneven));
}

TEST(DataTest, SamplesAreTheReferenceJobs) {
  // train.py's local_batch, run by jax 0.10.2: SEEDs up to 2^32 - 1, FEATURES
  // that are not multiples of 4, 8 or 16, CLASSES that are not powers of two
  // (and one above 2^16), steps and indices up to 2^31 - 1.
  const auto records = testing::ReadJaxVectors("jax_vectors.tsv", "sample");
  ASSERT_GE(records.size(), 180u);
  for (const auto& r : records) {
    const SampleSpec spec{testing::ParseU32(r[1]), int64_t(testing::ParseU64(r[2])),
                          int64_t(testing::ParseU64(r[3]))};
    const int64_t step = int64_t(testing::ParseU64(r[4])), microbatch = int64_t(testing::ParseU64(r[5]));
    const int64_t index = int64_t(testing::ParseU64(r[6]));
    const Batch sample = Generate(spec, step, microbatch, index, index + 1);
    const std::vector<uint32_t> expected = testing::ParseFloatBits(r[8]);
    ASSERT_EQ(expected.size(), size_t(spec.features));
    const std::string where = "seed " + r[1] + " step " + r[4] + " microbatch " + r[5] + " index " + r[6];
    for (int64_t f = 0; f < spec.features; ++f)
      ASSERT_EQ(FloatBits(sample.inputs[f]), expected[f]) << where << " feature " << f;
    EXPECT_EQ(sample.labels[0], std::stoi(r[7])) << where;
  }
}

TEST(DataTest, EveryValueIsTheScalarDefinition) {
  // 21 features: the chunks of 256 (sample, feature) pairs end inside
  // samples; 600: a sample spans three chunks, whole and cut. Each value must
  // be the definition evaluated one feature at a time (what the CUDA kernel does).
  for (const int64_t features : {21, 600}) {
    const SampleSpec spec{31337, features, 7};
    const int64_t begin = 3, end = 200;
    const Batch batch = Generate(spec, 9, 4, begin, end);
    const JaxKey update_key = UpdateKey(DataKey(spec.seed), 9, 4);
    for (int64_t i = begin; i < end; ++i) {
      const JaxKey image_key = SampleImageKey(update_key, uint32_t(i));
      for (uint32_t f = 0; f < uint32_t(features); ++f)
        ASSERT_EQ(FloatBits(batch.inputs[(i - begin) * features + f]),
                  FloatBits(JaxNormalFromBits(JaxBits32(image_key, f))))
            << "features " << features << " sample " << i << " feature " << f;
      ASSERT_EQ(batch.labels[i - begin], SampleLabel(update_key, uint32_t(i), 7)) << i;
    }
  }
}

TEST(DataTest, FeatureValuesDoNotDependOnFeatureCount) {
  // Feature f is element f of jax's bits, so a wider sample extends a narrower one.
  const Batch narrow = Generate({7, 5, 3}, 1, 0, 10, 12);
  const Batch wide = Generate({7, 9, 3}, 1, 0, 10, 12);
  for (int i = 0; i < 2; ++i)
    for (int f = 0; f < 5; ++f)
      EXPECT_EQ(FloatBits(narrow.inputs[i * 5 + f]), FloatBits(wide.inputs[i * 9 + f]));
  EXPECT_EQ(narrow.labels, wide.labels);
}

TEST(DataTest, EveryCoordinateChangesTheSample) {
  const SampleSpec spec{1, 8, 1000};
  const Batch base = Generate(spec, 1, 0, 0, 1);
  for (const Batch& other : {Generate({2, 8, 1000}, 1, 0, 0, 1), Generate(spec, 2, 0, 0, 1),
                             Generate(spec, 1, 1, 0, 1), Generate(spec, 1, 0, 1, 2)}) {
    EXPECT_NE(base.inputs, other.inputs);
  }
  EXPECT_TRUE(SameBytes(base, Generate(spec, 1, 0, 0, 1)));  // and a repeat does not
}

TEST(DataTest, LabelsAreInRangeAndRoughlyUniform) {
  const int64_t classes = 10, n = 100000;
  const Batch batch = Generate({99, 1, classes}, 5, 3, 0, n);
  std::vector<int64_t> counts(classes, 0);
  for (int32_t label : batch.labels) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, classes);
    ++counts[label];
  }
  double chi2 = 0;
  for (int64_t c : counts) chi2 += std::pow(c - n / double(classes), 2) / (n / double(classes));
  EXPECT_LT(chi2, 27.88);  // chi-square, 9 degrees of freedom, p = 0.001
  // One class: every label is 0.
  for (int32_t label : Generate({99, 1, 1}, 5, 3, 0, 1000).labels) EXPECT_EQ(label, 0);
}

TEST(DataTest, FeaturesAreStandardNormal) {
  const int64_t n = 25000, features = 4;  // 1e5 values
  const Batch batch = Generate({123, features, 2}, 2, 0, 0, n);
  double sum = 0, sum2 = 0, sum4 = 0;
  int64_t within_one = 0;
  for (float z : batch.inputs) {
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum2 += double(z) * z;
    sum4 += std::pow(double(z), 4);
    within_one += std::fabs(z) < 1;
  }
  const double count = double(batch.inputs.size());
  const double mean = sum / count, variance = sum2 / count - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.015);  // ~5 standard errors (1/sqrt(1e5) = 0.0032)
  EXPECT_NEAR(variance, 1.0, 0.025);
  EXPECT_NEAR(sum4 / count, 3.0, 0.15);
  EXPECT_NEAR(within_one / count, 0.682689, 0.008);
}

TEST(DataTest, LimitsFollowJaxsWords) {
  const SampleSpec ok{0, 512, 10};
  EXPECT_TRUE(CheckSampleLimits(ok, 4096, 100, 8).ok());
  EXPECT_TRUE(CheckSampleLimits({0, 4 * 0xFFFFFFFFll, INT32_MAX}, 0xFFFFFFFFll, 0xFFFFFFFFll,
                                0xFFFFFFFFll).ok());  // features index 64-bit bits
  EXPECT_EQ(CheckSampleLimits(ok, 0x100000000ll, 1, 1).code(), "ENV_INVALID");
  EXPECT_EQ(CheckSampleLimits(ok, 1, 0x100000000ll, 1).code(), "ENV_INVALID");
  EXPECT_EQ(CheckSampleLimits(ok, 1, 1, 0x100000000ll).code(), "ENV_INVALID");
  EXPECT_EQ(CheckSampleLimits({0, 4, int64_t{INT32_MAX} + 1}, 1, 1, 1).code(), "ENV_INVALID");
  EXPECT_EQ(CheckSampleLimits({0, 4, 0}, 1, 1, 1).code(), "ENV_INVALID");
  EXPECT_EQ(CheckSampleLimits(ok, 0x100000000ll, 1, 1).ToString(),
            "ENV_INVALID: BATCH 4294967296 exceeds 4294967295 (jax.random.fold_in takes 32-bit words)");
}

}  // namespace
}  // namespace dmlp
