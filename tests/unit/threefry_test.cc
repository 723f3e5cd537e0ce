// jax.random's threefry2x32 and key derivation against the real jax
// (tests/data/jax_vectors.tsv): key(seed), split, fold_in, raw blocks, bits.
#include "trainer/math/threefry.h"

#include <gtest/gtest.h>

#include "jax_vectors.h"

namespace dmlp {
namespace {

using testing::ParseU32;
using testing::ParseU64;
using testing::ReadJaxVectors;

TEST(ThreefryTest, RawBlocksAreJaxs) {
  const auto records = ReadJaxVectors("jax_vectors.tsv", "threefry");
  ASSERT_GE(records.size(), 4u);
  for (const auto& r : records) {
    const JaxKey out = Threefry2x32({ParseU32(r[1]), ParseU32(r[2])}, ParseU32(r[3]), ParseU32(r[4]));
    EXPECT_EQ(out.k0, ParseU32(r[5])) << r[1] << " " << r[2] << " " << r[3] << " " << r[4];
    EXPECT_EQ(out.k1, ParseU32(r[6]));
  }
}

TEST(ThreefryTest, KeyFromSeedIsJaxs) {
  const auto records = ReadJaxVectors("jax_vectors.tsv", "key");
  ASSERT_GE(records.size(), 7u);  // including 2^31 - 1, 2^31 and 2^32 - 1
  for (const auto& r : records) {
    const JaxKey key = JaxKeyFromSeed(ParseU32(r[1]));
    EXPECT_EQ(key.k0, ParseU32(r[2])) << "seed " << r[1];
    EXPECT_EQ(key.k1, ParseU32(r[3])) << "seed " << r[1];
  }
}

TEST(ThreefryTest, SplitAndFoldInAreJaxs) {
  const auto splits = ReadJaxVectors("jax_vectors.tsv", "split");
  const auto folds = ReadJaxVectors("jax_vectors.tsv", "fold_in");
  ASSERT_GE(splits.size(), 20u);
  ASSERT_GE(folds.size(), 40u);
  for (const auto& r : splits) {
    const JaxKey out = JaxSplit({ParseU32(r[1]), ParseU32(r[2])}, ParseU32(r[3]));
    EXPECT_EQ(out.k0, ParseU32(r[4])) << "split of " << r[1] << " " << r[2] << " [" << r[3] << "]";
    EXPECT_EQ(out.k1, ParseU32(r[5]));
  }
  for (const auto& r : folds) {
    const JaxKey out = JaxFoldIn({ParseU32(r[1]), ParseU32(r[2])}, ParseU32(r[3]));
    EXPECT_EQ(out.k0, ParseU32(r[4])) << "fold_in of " << r[1] << " " << r[2] << ", " << r[3];
    EXPECT_EQ(out.k1, ParseU32(r[5]));
  }
}

TEST(ThreefryTest, BitsAreJaxs) {
  const auto records = ReadJaxVectors("jax_vectors.tsv", "bits");
  ASSERT_GE(records.size(), 40u);
  for (const auto& r : records)
    EXPECT_EQ(JaxBits32({ParseU32(r[1]), ParseU32(r[2])}, ParseU64(r[3])), ParseU32(r[4]))
        << "bits of " << r[1] << " " << r[2] << " [" << r[3] << "]";
}

TEST(ThreefryTest, HighIndexWordIsTheCountersFirstWord) {
  // jax's bits for index n >= 2^32 use counter (n >> 32, n & 0xffffffff).
  const JaxKey key{1, 2};
  const JaxKey block = Threefry2x32(key, 3, 4);
  EXPECT_EQ(JaxBits32(key, (uint64_t{3} << 32) | 4), block.k0 ^ block.k1);
}

}  // namespace
}  // namespace dmlp
