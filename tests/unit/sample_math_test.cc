// The float step of jax's normal and truncated_normal, and randint, against the
// real jax: ALL 2^23 inputs of each float path (their hashes and the list of
// inputs that may differ: tests/data/jax_sample_tables.tsv), so one changed
// constant, FMA or rounding anywhere in trainer/math/xla_special.h fails here.
#include "trainer/math/sample_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "jax_tables.h"
#include "jax_vectors.h"

namespace dmlp {
namespace {

using testing::DmlpSampleTable;
using testing::kJaxTableSize;
using testing::ParseU32;
using testing::ReadJaxVectors;

// dmlp's table, with the recorded differences from jax replaced by jax's value,
// must hash to jax's table; the replaced entries must be what was recorded.
void ExpectTableIsJaxs(const std::string& name, float (*scalar)(uint32_t)) {
  std::vector<float> table = DmlpSampleTable(name);
  ASSERT_EQ(table.size(), kJaxTableSize);
  // The vector loops (the CPU platform) against the scalar function (what the
  // CUDA kernels run), on a spread of inputs including both ends.
  for (uint32_t mantissa = 0; mantissa < kJaxTableSize; mantissa += 13)
    ASSERT_EQ(FloatBits(table[mantissa]), FloatBits(scalar(mantissa << 9))) << name << mantissa;
  ASSERT_EQ(FloatBits(table.back()), FloatBits(scalar((kJaxTableSize - 1) << 9))) << name;
  for (const auto& r : ReadJaxVectors("jax_sample_tables.tsv", "differs")) {
    if (r[1] != name) continue;
    const uint32_t input = ParseU32(r[2]);
    ASSERT_LT(input, kJaxTableSize);
    EXPECT_EQ(FloatBits(table[input]), std::stoul(r[4], nullptr, 16)) << name << " " << input;
    table[input] = FloatFromBits(static_cast<uint32_t>(std::stoul(r[3], nullptr, 16)));
  }
  std::string jax_hash;
  for (const auto& r : ReadJaxVectors("jax_sample_tables.tsv", "table"))
    if (r[1] == name) jax_hash = r[2];
  ASSERT_EQ(jax_hash.size(), 64u) << name;
  EXPECT_EQ(Sha256Hex(table.data(), table.size() * sizeof(float)), jax_hash) << name;
}

TEST(SampleMathTest, NormalOfEveryInputIsJaxs) {
  ExpectTableIsJaxs("normal", [](uint32_t bits) { return JaxNormalFromBits(bits); });
}

TEST(SampleMathTest, TruncatedNormalOfEveryInputIsJaxs) {
  ExpectTableIsJaxs("truncated_normal",
                    [](uint32_t bits) { return JaxTruncatedNormalFromBits(bits); });
}

TEST(SampleMathTest, NoInputIsListedAsDifferent) {
  // The aim, reached: dmlp and jax agree on every input of both paths.
  EXPECT_TRUE(ReadJaxVectors("jax_sample_tables.tsv", "differs").empty());
}

TEST(SampleMathTest, TruncatedNormalStaysInsideTwo) {
  for (uint32_t bits : {0u, 0xFFFFFFFFu, 1u << 9, 0xFFFFFE00u}) {
    const float z = JaxTruncatedNormalFromBits(bits);
    EXPECT_GT(z, -2.0f) << bits;
    EXPECT_LT(z, 2.0f) << bits;
  }
  // u = a exactly: jax's erf_inv lands just inside the clip bound (-2 + 2^-22).
  EXPECT_EQ(FloatBits(JaxTruncatedNormalFromBits(0)), 0xbffffffeu);
}

TEST(SampleMathTest, NormalEndsAreFinite) {
  // u = lo gives erf_inv(-1 + 2^-24), the most negative normal jax draws (-5.42).
  EXPECT_TRUE(std::isfinite(JaxNormalFromBits(0)));
  EXPECT_TRUE(std::isfinite(JaxNormalFromBits(0xFFFFFFFFu)));
  EXPECT_LT(JaxNormalFromBits(0), -5.4f);
  EXPECT_GT(JaxNormalFromBits(0xFFFFFFFFu), 5.0f);
}

TEST(SampleMathTest, RandintIsJaxsModularReduction) {
  // randint(key, (), 0, span): hi = bits(split(key)[0]), lo = bits(split(key)[1]),
  // ((hi mod span) * ((2^16 mod span)^2 mod span) + lo mod span) mod span in uint32.
  const JaxKey key{0x12345678u, 0x9abcdef0u};
  const uint32_t hi = JaxBits32(JaxSplit(key, 0), 0), lo = JaxBits32(JaxSplit(key, 1), 0);
  for (uint32_t span : {1u, 2u, 3u, 5u, 10u, 1000u, 65537u, 0x7FFFFFFFu}) {
    const uint64_t exact = ((uint64_t{hi} << 32) | lo) % span;
    const int32_t label = JaxRandint(key, span);
    ASSERT_GE(label, 0);
    ASSERT_LT(static_cast<uint32_t>(label), span);
    // Below 2^16 the uint32 products cannot wrap: jax's result is the exact 64-bit remainder.
    if (span <= 65536u) {
      EXPECT_EQ(static_cast<uint64_t>(label), exact) << span;
    }
  }
}

}  // namespace
}  // namespace dmlp
