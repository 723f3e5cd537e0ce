// The fold and Adam that take the shared segment's checksums as they read
// (trainer/cpu/checksummed_passes.h): the same floats as the unchecked passes,
// bit for bit, on values where a reordered or widened operation would show
// (NaN payloads, two NaNs meeting in one add, infinities, signed zeros,
// denormals), and the same checksum terms as slice_checksum.h's of the same
// bytes, for any split of a slice into the pieces a rank's threads get.
// Where two NaNs meet the payload is x86's (the left operand's), which QEMU
// 7.2's user mode does not emulate for SSE: run natively.
#include "trainer/cpu/checksummed_passes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "trainer/cpu/adam_cpu.h"
#include "trainer/cpu/cpu_parallel.h"
#include "trainer/cpu/slice_checksum.h"
#include "trainer/math/ordered_reduce.h"

namespace dmlp {
namespace {

// Longer than two blocks, and odd: the last block is short and ends in the odd float.
constexpr size_t kSlice = 2 * kChecksummedBlockFloats + 517;

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Random floats of every magnitude, with the special values sprinkled in.
std::vector<float> Awkward(size_t count, uint32_t seed) {
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            FromBits(0x7fc00001u),  // quiet NaN with a payload
                            FromBits(0xffa00000u),  // signalling NaN, negative
                            std::numeric_limits<float>::denorm_min(),
                            -FromBits(0x007fffffu),  // the largest denormal, negative
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::max()};
  std::mt19937 random(seed);
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t pick = random();
    values[i] = pick % 5 == 0 ? specials[pick / 5 % std::size(specials)] : FromBits(static_cast<uint32_t>(random()));
  }
  return values;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The pieces a slice is cut into: one, a rank's two threads', odd-sized
// pieces of whole words, and a piece per block.
std::vector<std::vector<size_t>> Splits() {
  return {{0, kSlice}, {0, 1024 + 512, kSlice}, {0, 2, 10, 1034, kSlice}, {0, 1024, 2048, kSlice}};
}

TEST(ChecksummedPassesTest, FoldGivesTheUncheckedFoldsBitsAndTheChecksumsOfWhatItReadAndWrote) {
  for (size_t shards : {1, 2, 3, 5}) {
    const size_t stride = kSlice + 7;  // partials further apart than a slice, as in the segment
    const std::vector<float> partials = Awkward(shards * stride, static_cast<uint32_t>(shards));
    std::vector<float> expected(kSlice);
    FoldShardsInOrder(partials.data(), shards, stride, kSlice, expected.data());
    for (const auto& split : Splits()) {
      std::vector<float> out(kSlice, 42.0f);
      std::vector<uint64_t> terms(shards + 1, 0);
      for (size_t i = 0; i + 1 < split.size(); ++i) {
        FoldShardsChecksummed(partials.data() + split[i], shards, stride, split[i + 1] - split[i], split[i],
                              out.data() + split[i], terms.data());
      }
      EXPECT_TRUE(SameBits(out, expected)) << shards << " shards, " << split.size() - 1 << " pieces";
      for (size_t shard = 0; shard < shards; ++shard) {
        EXPECT_EQ(FinishChecksum(terms[shard], kSlice), SliceChecksum(partials.data() + shard * stride, kSlice))
            << "shard " << shard << " of " << shards;
      }
      EXPECT_EQ(FinishChecksum(terms[shards], kSlice), SliceChecksum(out.data(), kSlice)) << shards << " shards";
    }
  }
}

TEST(ChecksummedPassesTest, AdamGivesTheUncheckedUpdatesBitsAndTheChecksumOfTheGradientItRead) {
  const std::vector<float> grad = Awkward(kSlice, 11);
  std::vector<float> params = Awkward(kSlice, 12), mu = Awkward(kSlice, 13), nu = Awkward(kSlice, 14);
  for (float& v : nu) v = std::fabs(v);  // a second moment is never negative (NaN stays NaN)
  for (int32_t count : {1, 2, 1000}) {
    const AdamScalars scalars = MakeAdamScalars(count, 1e-3);
    std::vector<float> expected_params = params, expected_mu = mu, expected_nu = nu;
    AdamUpdate(scalars, grad.data(), expected_params.data(), expected_mu.data(), expected_nu.data(), kSlice);
    for (const auto& split : Splits()) {
      std::vector<float> p = params, m = mu, v = nu;
      uint64_t terms = 0;
      for (size_t i = 0; i + 1 < split.size(); ++i) {
        const size_t first = split[i];
        terms += AdamUpdateChecksummed(scalars, grad.data() + first, p.data() + first, m.data() + first,
                                       v.data() + first, split[i + 1] - first, first);
      }
      EXPECT_TRUE(SameBits(p, expected_params)) << "count " << count << ", " << split.size() - 1 << " pieces";
      EXPECT_TRUE(SameBits(m, expected_mu)) << "count " << count;
      EXPECT_TRUE(SameBits(v, expected_nu)) << "count " << count;
      EXPECT_EQ(FinishChecksum(terms, kSlice), SliceChecksum(grad.data(), kSlice)) << "count " << count;
    }
  }
}

// A reduced vector as the segment holds it: parameters, the loss, padding,
// in slices of odd length, so slices start mid-word and one holds the loss;
// on three threads in small pieces. Every slice's checksum is SliceChecksum's
// of it, the update AdamUpdate's over the parameters, the loss the float read.
TEST(ChecksummedPassesTest, SliceByTheRanksThreadsChecksEverySliceAndUpdatesExactlyTheParameters) {
  SetCpuParallelThreads(3);
  for (size_t parameters : {size_t{3 * 1001 - 3}, size_t{3 * 1001 - 2}, size_t{2 * 1001 + 5}}) {
    constexpr size_t kRanks = 3, kOddSlice = 1001;
    const std::vector<float> reduced = Awkward(kRanks * kOddSlice, static_cast<uint32_t>(parameters));
    const std::vector<float> params = Awkward(parameters, 31), mu = Awkward(parameters, 32);
    std::vector<float> nu = Awkward(parameters, 33);
    for (float& v : nu) v = std::fabs(v);
    const AdamScalars scalars = MakeAdamScalars(7, 1e-3);
    std::vector<float> expected_params = params, expected_mu = mu, expected_nu = nu;
    AdamUpdate(scalars, reduced.data(), expected_params.data(), expected_mu.data(), expected_nu.data(), parameters);
    std::vector<float> p = params, m = mu, v = nu;
    float loss = 0;
    for (size_t start = 0; start < reduced.size(); start += kOddSlice) {
      EXPECT_EQ(AdamUpdateSliceChecksummed(scalars, reduced.data(), start, kOddSlice, parameters, 64, p.data(),
                                           m.data(), v.data(), &loss),
                SliceChecksum(reduced.data() + start, kOddSlice))
          << parameters << " parameters, slice at " << start;
    }
    EXPECT_TRUE(SameBits(p, expected_params)) << parameters;
    EXPECT_TRUE(SameBits(m, expected_mu)) << parameters;
    EXPECT_TRUE(SameBits(v, expected_nu)) << parameters;
    EXPECT_EQ(std::memcmp(&loss, &reduced[parameters], sizeof loss), 0) << parameters;

    const std::vector<float> partials = Awkward(2 * reduced.size(), 41);
    std::vector<float> out(kOddSlice), expected(kOddSlice);
    const size_t own = kOddSlice;  // rank 1's slice
    FoldShardsInOrder(partials.data() + own, 2, reduced.size(), kOddSlice, expected.data());
    const std::vector<uint64_t> checksums =
        FoldSliceChecksummed(partials.data() + own, 2, reduced.size(), kOddSlice, 64, out.data());
    EXPECT_TRUE(SameBits(out, expected));
    EXPECT_EQ(checksums[0], SliceChecksum(partials.data() + own, kOddSlice));
    EXPECT_EQ(checksums[1], SliceChecksum(partials.data() + reduced.size() + own, kOddSlice));
    EXPECT_EQ(checksums[2], SliceChecksum(out.data(), kOddSlice));
  }
  SetCpuParallelThreads(1);
}

// The terms are of the bytes read: a float changed in the source changes the
// checksum the pass computes, wherever it lies (first, in a middle block,
// the odd last float).
TEST(ChecksummedPassesTest, AChangedFloatChangesTheChecksumThePassesCompute) {
  const std::vector<float> partials = Awkward(2 * kSlice, 21);
  const auto fold_terms = [](const std::vector<float>& from) {
    std::vector<float> out(kSlice);
    std::vector<uint64_t> terms(3, 0);
    FoldShardsChecksummed(from.data(), 2, kSlice, kSlice, 0, out.data(), terms.data());
    return terms;
  };
  const std::vector<uint64_t> intact = fold_terms(partials);
  for (size_t at : {size_t{0}, kChecksummedBlockFloats + 3, kSlice - 1}) {
    std::vector<float> changed = partials;
    changed[kSlice + at] = FromBits(0x7fc00002u);  // shard 1
    const std::vector<uint64_t> terms = fold_terms(changed);
    EXPECT_EQ(terms[0], intact[0]) << at;
    EXPECT_NE(terms[1], intact[1]) << at;
    std::vector<float> params(kSlice), mu(kSlice), nu(kSlice);
    EXPECT_NE(AdamUpdateChecksummed(MakeAdamScalars(1, 1e-3), changed.data() + kSlice, params.data(), mu.data(),
                                    nu.data(), kSlice, 0),
              AdamUpdateChecksummed(MakeAdamScalars(1, 1e-3), partials.data() + kSlice, params.data(), mu.data(),
                                    nu.data(), kSlice, 0))
        << at;
  }
}

}  // namespace
}  // namespace dmlp
