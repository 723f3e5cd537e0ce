// dmlp's SGEMM (trainer/cpu/ordered_sgemm.h): every kernel this CPU runs, with
// 1 and 2 threads, gives the bits of the order rule, computed here by the most
// literal loop there is (one std::fma chain per element, increasing k, from +0).
// Odd shapes, sizes off every tile, K past two k-blocks and off the block,
// every transpose pair, strided operands, denormal inputs and outputs, -0,
// infinities, alpha/beta, a caller that left flush-to-zero on, and the
// epilogues (gemm_epilogue.h) against the separate passes they replaced.
#include "trainer/cpu/ordered_sgemm.h"

#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace dmlp {
namespace {

struct Case {
  int m, n, k;
  bool ta, tb;
};

struct Problem {
  Case s;
  size_t lda, ldb, ldc;
  std::vector<float> a, b, c;
  float A(int i, int k) const { return s.ta ? a[k * lda + i] : a[i * lda + k]; }
  float B(int k, int j) const { return s.tb ? b[j * ldb + k] : b[k * ldb + j]; }
};

uint32_t Next(uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<uint32_t>(state >> 32);
}

// Values in [-1, 1); with `denormal`, one in eight is a denormal of either sign
// scaled so that products and sums land in the denormal range too.
Problem Make(const Case& s, int pad, uint64_t seed, bool denormal) {
  Problem p{s, size_t((s.ta ? s.m : s.k) + pad), size_t((s.tb ? s.k : s.n) + pad), size_t(s.n + pad), {}, {}, {}};
  p.a.resize(size_t(s.ta ? s.k : s.m) * p.lda);
  p.b.resize(size_t(s.tb ? s.n : s.k) * p.ldb);
  p.c.resize(size_t(s.m) * p.ldc);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto* values : {&p.a, &p.b, &p.c}) {
    for (float& v : *values) {
      const uint32_t r = Next(state);
      v = static_cast<float>(static_cast<int32_t>(r >> 8) - (1 << 23)) / (1 << 23);
      if (denormal && r % 8 == 0) v *= 1e-38f;      // a denormal (or near it)
      if (denormal && r % 8 == 1) v *= 1e-20f;      // products below FLT_MIN
    }
  }
  return p;
}

// The order rule, literally.
std::vector<float> Rule(const Problem& p, float alpha, float beta) {
  std::vector<float> c = p.c;
  for (int i = 0; i < p.s.m; ++i) {
    for (int j = 0; j < p.s.n; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < p.s.k; ++k) sum = std::fma(p.A(i, k), p.B(k, j), sum);
      const float scaled = alpha * sum;
      float& out = c[i * p.ldc + j];
      out = beta == 0.0f ? scaled : scaled + beta * out;
    }
  }
  return c;
}

// C, and two rows past its last that the kernel must leave alone (a short
// panel or an edge tile writing beyond C's rows fails here, not only under ASan).
std::vector<float> RunKernel(GemmIsa isa, int threads, const Problem& p, float alpha, float beta,
                             const GemmEpilogue& epilogue = GemmEpilogue::None()) {
  const float guard = -12345.0f;
  std::vector<float> c = p.c;
  c.resize(p.c.size() + 2 * p.ldc, guard);
  OrderedSgemm(isa, threads, p.s.ta, p.s.tb, p.s.m, p.s.n, p.s.k, alpha, p.a.data(), p.lda, p.b.data(), p.ldb,
               beta, c.data(), p.ldc, epilogue);
  for (size_t e = p.c.size(); e < c.size(); ++e) {
    EXPECT_EQ(c[e], guard) << "written past C's last row, element " << e - p.c.size();
    if (c[e] != guard) break;
  }
  c.resize(p.c.size());
  return c;
}

// Bitwise, so -0 vs +0 and NaN payloads count; the first differing element is named.
::testing::AssertionResult SameBits(const std::vector<float>& want, const std::vector<float>& got) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t e = 0; e < want.size(); ++e) {
    uint32_t x, y;
    std::memcpy(&x, &want[e], 4);
    std::memcpy(&y, &got[e], 4);
    if (x != y)
      return ::testing::AssertionFailure() << "element " << e << ": rule " << want[e] << " (0x" << std::hex << x
                                           << "), kernel " << got[e] << " (0x" << y << ")";
  }
  return ::testing::AssertionSuccess();
}

std::vector<GemmIsa> Kernels() {
  std::vector<GemmIsa> kernels;
  for (GemmIsa isa : {GemmIsa::kScalar, GemmIsa::kAvx2, GemmIsa::kAvx512})
    if (GemmIsaSupported(isa)) kernels.push_back(isa);
  return kernels;
}

// Off every tile (12/6/4 rows, 32/16/8 columns, 192-row A blocks, 24-row
// chunks, 1024-column B blocks); K = 2 * 256 + 37 crosses two k-block
// boundaries and is a multiple of no unroll; the MLP's transposes, including
// the CLASSES=10 layer, which the AVX-512 kernel runs transposed (n <= 16, m >= 32).
const Case kCases[] = {
    {1, 1, 1, false, false},     {13, 33, 549, false, false}, {97, 257, 549, false, false},
    {7, 10, 300, false, false},  {100, 10, 37, true, false},  {37, 70, 549, true, false},
    {61, 45, 517, false, true},  {23, 129, 10, false, true},  {50, 31, 256, true, true},
    {5, 300, 513, false, false}, {200, 40, 549, true, false}, {130, 16, 600, false, true},
    {64, 3, 513, true, true},    {20, 1100, 40, false, false}, {33, 17, 700, false, false},
};

// With several threads, a chunk of rows may run its k-blocks on different
// threads, each continuing from what the last left in C: 11 k-blocks over
// 9-17 chunks, more threads than this machine's cores (so that some wait for
// a chunk whose thread the system stopped, and yield), 12 times over: without
// the wait, this failed in 6 runs of 6.
TEST(OrderedSgemmTest, ChunksContinueTheirChainsOnWhicheverThreadTakesThem) {
  const Problem p = Make({200, 70, 2600, false, false}, 3, 21, false);
  const std::vector<float> want = Rule(p, 1.0f, 0.0f);
  for (GemmIsa isa : Kernels()) {
    if (isa == GemmIsa::kScalar) continue;  // 36 MFLOP of fmaf per call: the rule check above covers it
    for (int threads : {2, 3, 4}) {
      for (int repeat = 0; repeat < 12; ++repeat) {
        SCOPED_TRACE(std::string(GemmIsaName(isa)) + " threads=" + std::to_string(threads));
        EXPECT_TRUE(SameBits(want, RunKernel(isa, threads, p, 1.0f, 0.0f)));
      }
    }
  }
}

TEST(OrderedSgemmTest, EveryKernelGivesTheRuleBitsWithOneAndTwoThreads) {
  ASSERT_TRUE(GemmIsaSupported(GemmIsa::kScalar));
  uint64_t seed = 1;
  for (const Case& s : kCases) {
    for (bool denormal : {false, true}) {
      const Problem p = Make(s, s.m % 3, seed++, denormal);
      const std::vector<float> want = Rule(p, 1.0f, 0.0f);
      for (GemmIsa isa : Kernels()) {
        for (int threads : {1, 2}) {
          SCOPED_TRACE(std::string(GemmIsaName(isa)) + " threads=" + std::to_string(threads) + " m=" +
                       std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                       " ta=" + std::to_string(s.ta) + " tb=" + std::to_string(s.tb) +
                       " denormal=" + std::to_string(denormal));
          EXPECT_TRUE(SameBits(want, RunKernel(isa, threads, p, 1.0f, 0.0f)));
        }
      }
    }
  }
}

TEST(OrderedSgemmTest, DenormalResultsAreKeptNotFlushed) {
  // Every product is 2^-140 (a denormal); the sums stay below FLT_MIN.
  Problem p = Make({9, 40, 600, false, false}, 0, 5, false);
  std::fill(p.a.begin(), p.a.end(), std::ldexp(1.0f, -70));
  std::fill(p.b.begin(), p.b.end(), std::ldexp(1.0f, -70));
  const std::vector<float> want = Rule(p, 1.0f, 0.0f);
  ASSERT_EQ(want[0], std::ldexp(600.0f, -140));
  ASSERT_EQ(std::fpclassify(want[0]), FP_SUBNORMAL);
  for (GemmIsa isa : Kernels()) EXPECT_TRUE(SameBits(want, RunKernel(isa, 2, p, 1.0f, 0.0f))) << GemmIsaName(isa);
}

TEST(OrderedSgemmTest, ACallerWithFlushToZeroOnGetsTheSameBitsAndKeepsItsMxcsr) {
  const Problem p = Make({31, 50, 530, false, false}, 1, 9, true);
  const std::vector<float> want = Rule(p, 1.0f, 0.0f);
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040);  // FTZ and DAZ on in this (calling) thread
  std::vector<std::vector<float>> got;
  for (GemmIsa isa : Kernels()) got.push_back(RunKernel(isa, 1, p, 1.0f, 0.0f));
  const unsigned during = _mm_getcsr();
  _mm_setcsr(saved);
  EXPECT_EQ(during & 0x8040u, 0x8040u) << "the caller's MXCSR was not restored";
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(SameBits(want, got[i])) << GemmIsaName(Kernels()[i]);
}

TEST(OrderedSgemmTest, SignedZerosInfinitiesAndTheChainStartAtPlusZero) {
  // Row 0: every product is -0, so the chain from +0 stays +0 (a chain started
  // with a plain multiply would give -0). Row 1: +Inf times a finite value.
  // Row 2: Inf * 0 in one element only: NaN there, nowhere else (no padding along k).
  Problem p = Make({3, 35, 5, false, false}, 0, 3, false);
  for (int k = 0; k < 5; ++k) {
    p.a[0 * p.lda + k] = -0.0f;
    p.a[1 * p.lda + k] = k == 2 ? std::numeric_limits<float>::infinity() : 1.0f;
    p.a[2 * p.lda + k] = k == 4 ? std::numeric_limits<float>::infinity() : 0.5f;
  }
  for (int j = 0; j < 35; ++j) p.b[4 * p.ldb + j] = j == 7 ? 0.0f : 1.0f;
  for (int j = 0; j < 35; ++j) p.b[2 * p.ldb + j] = std::fabs(p.b[2 * p.ldb + j]) + 1.0f;
  const std::vector<float> want = Rule(p, 1.0f, 0.0f);
  ASSERT_FALSE(std::signbit(want[0]));
  ASSERT_EQ(want[0], 0.0f);
  ASSERT_TRUE(std::isinf(want[p.ldc]));
  ASSERT_TRUE(std::isnan(want[2 * p.ldc + 7]));
  ASSERT_TRUE(std::isinf(want[2 * p.ldc + 6]));
  for (GemmIsa isa : Kernels()) EXPECT_TRUE(SameBits(want, RunKernel(isa, 1, p, 1.0f, 0.0f))) << GemmIsaName(isa);
}

TEST(OrderedSgemmTest, AlphaAndBetaAreAppliedOnceAfterTheChain) {
  const Problem p = Make({29, 41, 300, true, false}, 2, 11, false);
  for (auto [alpha, beta] : {std::pair{0.75f, 0.0f}, std::pair{1.0f, 0.5f}, std::pair{-3.0f, 2.0f}}) {
    const std::vector<float> want = Rule(p, alpha, beta);
    for (GemmIsa isa : Kernels())
      EXPECT_TRUE(SameBits(want, RunKernel(isa, 2, p, alpha, beta))) << GemmIsaName(isa) << " alpha=" << alpha;
  }
}

TEST(OrderedSgemmTest, BetaZeroNeverReadsC) {
  Problem p = Make({14, 33, 270, false, true}, 1, 13, false);
  std::fill(p.c.begin(), p.c.end(), std::numeric_limits<float>::quiet_NaN());
  const std::vector<float> want = Rule(p, 1.0f, 0.0f);
  for (GemmIsa isa : Kernels()) {
    const std::vector<float> got = RunKernel(isa, 2, p, 1.0f, 0.0f);
    EXPECT_TRUE(SameBits(want, got)) << GemmIsaName(isa);
    for (int j = 0; j < 33; ++j) EXPECT_FALSE(std::isnan(got[j])) << GemmIsaName(isa);
  }
  // K = 0: C = alpha * (+0), again without reading it.
  Problem empty = Make({4, 5, 0, false, false}, 0, 14, false);
  std::fill(empty.c.begin(), empty.c.end(), std::numeric_limits<float>::quiet_NaN());
  for (GemmIsa isa : Kernels()) EXPECT_TRUE(SameBits(std::vector<float>(20, 0.0f), RunKernel(isa, 1, empty, 1.0f, 0.0f)));
}

// The MLP's element-wise passes as they ran after the GEMM before the
// epilogue was fused into its tiles, literally.
void SeparatePass(const GemmEpilogue& e, const Problem& p, std::vector<float>& c) {
  for (int i = 0; i < p.s.m; ++i) {
    for (int j = 0; j < p.s.n; ++j) {
      float& x = c[i * p.ldc + j];
      switch (e.kind) {
        case GemmEpilogue::Kind::kNone: break;
        case GemmEpilogue::Kind::kAddBias: x = x + e.bias[j]; break;
        case GemmEpilogue::Kind::kAddBiasRelu: {
          const float v = x + e.bias[j];
          x = v <= 0.0f ? 0.0f : v;
          break;
        }
        case GemmEpilogue::Kind::kMaskByPositive: x = e.mask[i * e.mask_stride + j] > 0.0f ? x : 0.0f; break;
      }
    }
  }
}

// Biases and masks with the values whose handling is easy to get wrong: a
// NaN (passes through the ReLU; masks its element to 0), -0 and +0 (masked;
// -0 + +0 sums are +0), denormals (positive ones keep their element),
// infinities, and large negatives that the ReLU zeroes.
std::vector<float> EdgeValues(size_t count, uint64_t seed) {
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -0.0f, 0.0f, 1e-40f, -1e-40f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            -1e30f};
  std::vector<float> values(count);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 5;
  for (float& v : values) {
    const uint32_t r = Next(state);
    v = r % 5 == 0 ? specials[(r >> 8) % 8] : static_cast<float>(static_cast<int32_t>(r >> 8) - (1 << 23)) / (1 << 23);
  }
  return values;
}

TEST(OrderedSgemmTest, EveryEpilogueGivesTheBitsOfTheRuleThenItsSeparatePass) {
  uint64_t seed = 100;
  for (const Case& s : kCases) {
    const Problem p = Make(s, s.n % 3, seed++, false);
    const std::vector<float> bias = EdgeValues(size_t(s.n), seed++);
    const std::vector<float> mask = EdgeValues(size_t(s.m) * p.ldc, seed++);
    for (const GemmEpilogue& e : {GemmEpilogue::AddBias(bias.data()), GemmEpilogue::AddBiasRelu(bias.data()),
                                  GemmEpilogue::MaskByPositive(mask.data(), p.ldc)}) {
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{-0.5f, 2.0f}}) {  // fused; after the scratch
        std::vector<float> want = Rule(p, alpha, beta);
        SeparatePass(e, p, want);
        for (GemmIsa isa : Kernels()) {
          for (int threads : {1, 2}) {
            SCOPED_TRACE(std::string(GemmIsaName(isa)) + " threads=" + std::to_string(threads) + " m=" +
                         std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
                         " epilogue=" + std::to_string(static_cast<int>(e.kind)) + " alpha=" + std::to_string(alpha));
            EXPECT_TRUE(SameBits(want, RunKernel(isa, threads, p, alpha, beta, e)));
          }
        }
      }
    }
  }
}

TEST(OrderedSgemmTest, TheEpilogueFollowsTheLastKBlockOnlyAndZeroDepth) {
  // K past three k-blocks, rows spread over many chunks and threads: an
  // epilogue applied after an earlier block would be summed into the chain.
  const Problem p = Make({150, 70, 3 * 256 + 11, false, false}, 2, 31, false);
  const std::vector<float> bias = EdgeValues(70, 32);
  std::vector<float> want = Rule(p, 1.0f, 0.0f);
  SeparatePass(GemmEpilogue::AddBiasRelu(bias.data()), p, want);
  for (GemmIsa isa : Kernels())
    for (int threads : {1, 3})
      EXPECT_TRUE(SameBits(want, RunKernel(isa, threads, p, 1.0f, 0.0f, GemmEpilogue::AddBiasRelu(bias.data()))))
          << GemmIsaName(isa) << " threads=" << threads;
  // K = 0: C = +0, then the epilogue (bias alone).
  const Problem empty = Make({4, 5, 0, false, false}, 0, 33, false);
  const std::vector<float> bias5 = EdgeValues(5, 34);
  std::vector<float> zeros(20, 0.0f);
  SeparatePass(GemmEpilogue::AddBias(bias5.data()), empty, zeros);
  for (GemmIsa isa : Kernels())
    EXPECT_TRUE(SameBits(zeros, RunKernel(isa, 1, empty, 1.0f, 0.0f, GemmEpilogue::AddBias(bias5.data()))));
}

TEST(OrderedSgemmTest, TheReluEpilogueTurnsMinusZeroIntoPlusZeroAndPassesNaN) {
  // Row 0 of A is zeros, so S = +0 there and alpha = -1 makes it -0, which a
  // -0 bias keeps: jax.nn.relu gives +0. A NaN bias gives NaN, not 0.
  Problem p = Make({3, 40, 300, false, false}, 0, 41, false);
  std::fill_n(p.a.begin(), 300, 0.0f);
  std::vector<float> bias(40, -0.0f);
  bias[7] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> want = Rule(p, -1.0f, 0.0f);
  ASSERT_TRUE(std::signbit(want[0]));
  SeparatePass(GemmEpilogue::AddBiasRelu(bias.data()), p, want);
  ASSERT_FALSE(std::signbit(want[0]));
  ASSERT_TRUE(std::isnan(want[7]));
  for (GemmIsa isa : Kernels())
    EXPECT_TRUE(SameBits(want, RunKernel(isa, 2, p, -1.0f, 0.0f, GemmEpilogue::AddBiasRelu(bias.data()))))
        << GemmIsaName(isa);
}

TEST(OrderedSgemmTest, ThisCpuRunsTheKernelsItClaims) {
  // The development and CI machines have AVX2 + FMA; the claim must match cpuid.
  EXPECT_EQ(GemmIsaSupported(GemmIsa::kAvx512), static_cast<bool>(__builtin_cpu_supports("avx512f")));
  EXPECT_EQ(GemmIsaSupported(GemmIsa::kAvx2),
            __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
}

}  // namespace
}  // namespace dmlp
