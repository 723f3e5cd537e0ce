// The CPU GEMM: row-major results against a float64 reference for every
// transpose pair, repeatability, and the promise the thread policy rests on:
// the same bits for every thread count.
#include "trainer/cpu/gemm_cpu.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace dmlp {
namespace {

struct Shape {
  int m, n, k;
  bool transpose_a, transpose_b;
};

// Operands stored row-major with padded leading dimensions (ld = stored columns + pad).
struct Problem {
  Shape shape;
  int lda, ldb, ldc;
  std::vector<float> a, b, c;
};

int StoredRows(int rows, int cols, bool transposed) { return transposed ? cols : rows; }
int StoredCols(int rows, int cols, bool transposed) { return transposed ? rows : cols; }

// Deterministic values in [-1, 1) with 24 significant bits.
void Fill(std::vector<float>& values, uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 7;
  for (float& v : values) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    v = static_cast<float>(static_cast<int32_t>(state >> 40) - (1 << 23)) / (1 << 23);
  }
}

Problem MakeProblem(const Shape& s, int pad, uint64_t seed) {
  Problem p{s, StoredCols(s.m, s.k, s.transpose_a) + pad, StoredCols(s.k, s.n, s.transpose_b) + pad,
            s.n + pad, {}, {}, {}};
  p.a.resize(static_cast<size_t>(StoredRows(s.m, s.k, s.transpose_a)) * p.lda);
  p.b.resize(static_cast<size_t>(StoredRows(s.k, s.n, s.transpose_b)) * p.ldb);
  p.c.resize(static_cast<size_t>(s.m) * p.ldc);
  Fill(p.a, seed);
  Fill(p.b, seed + 1);
  Fill(p.c, seed + 2);
  return p;
}

// op(X)[i][j] of a row-major stored matrix.
double At(const std::vector<float>& x, int ld, bool transposed, int i, int j) {
  return transposed ? x[static_cast<size_t>(j) * ld + i] : x[static_cast<size_t>(i) * ld + j];
}

void RunGemm(Problem& p, float alpha, float beta) {
  const Shape& s = p.shape;
  Sgemm(s.transpose_a, s.transpose_b, s.m, s.n, s.k, alpha, p.a.data(), p.lda, p.b.data(), p.ldb,
        beta, p.c.data(), p.ldc);
}

// Sgemm against a float64 reference, element by element, with a bound that
// scales with k and the magnitudes summed (the float32 rounding error bound).
void ExpectMatchesReference(const Shape& s, int pad, float alpha, float beta) {
  Problem p = MakeProblem(s, pad, 1000 + s.m * 7 + s.n * 3 + s.k);
  const std::vector<float> c_before = p.c;
  RunGemm(p, alpha, beta);
  const double eps = std::numeric_limits<float>::epsilon();
  for (int i = 0; i < s.m; ++i) {
    for (int j = 0; j < s.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int l = 0; l < s.k; ++l) {
        double term = At(p.a, p.lda, s.transpose_a, i, l) * At(p.b, p.ldb, s.transpose_b, l, j);
        sum += term;
        magnitude += std::fabs(term);
      }
      const double before = c_before[static_cast<size_t>(i) * p.ldc + j];
      const double expected = alpha * sum + beta * before;
      const double bound = (s.k + 4) * eps * (std::fabs(alpha) * magnitude + std::fabs(beta * before));
      ASSERT_NEAR(p.c[static_cast<size_t>(i) * p.ldc + j], expected, bound)
          << "m=" << s.m << " n=" << s.n << " k=" << s.k << " ta=" << s.transpose_a
          << " tb=" << s.transpose_b << " at (" << i << "," << j << ")";
    }
  }
  // Padding between rows is never written.
  for (int i = 0; i < s.m; ++i) {
    for (int j = s.n; j < p.ldc; ++j) {
      ASSERT_EQ(p.c[static_cast<size_t>(i) * p.ldc + j], c_before[static_cast<size_t>(i) * p.ldc + j]);
    }
  }
}

// Each case runs with dmlp's own GEMM (auto: the fastest kernel here) and with BLIS.
class GemmCpuTest : public ::testing::TestWithParam<CpuGemm> {
 protected:
  void SetUp() override { ASSERT_TRUE(InitCpuGemm(1, GetParam()).ok()); }
};

INSTANTIATE_TEST_SUITE_P(Choices, GemmCpuTest, ::testing::Values(CpuGemm::kAuto, CpuGemm::kBlis),
                         [](const ::testing::TestParamInfo<CpuGemm>& info) {
                           return std::string(kCpuGemmChoices[static_cast<int>(info.param)]);
                         });

const Shape kOddShapes[] = {{1, 1, 1, false, false},    {37, 53, 71, false, false},
                            {3, 129, 517, false, true}, {130, 17, 33, true, false},
                            {61, 301, 1100, true, true}, {200, 10, 777, false, false}};

TEST_P(GemmCpuTest, MatchesFloat64ReferenceForEveryTransposePair) {
  for (Shape s : kOddShapes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        s.transpose_a = ta;
        s.transpose_b = tb;
        ExpectMatchesReference(s, 0, 1.0f, 0.0f);
        ExpectMatchesReference(s, 5, -0.75f, 1.5f);
      }
    }
  }
}

TEST_P(GemmCpuTest, BetaZeroNeverReadsC) {
  Problem p = MakeProblem({45, 67, 89, true, false}, 3, 42);
  std::fill(p.c.begin(), p.c.end(), std::numeric_limits<float>::quiet_NaN());
  RunGemm(p, 1.0f, 0.0f);
  for (int i = 0; i < 45; ++i) {
    for (int j = 0; j < 67; ++j) ASSERT_TRUE(std::isfinite(p.c[static_cast<size_t>(i) * p.ldc + j]));
  }
}

TEST_P(GemmCpuTest, ZeroDepthScalesC) {
  Problem p = MakeProblem({4, 5, 0, false, false}, 0, 9);
  p.lda = 1;  // k = 0: A has no columns, BLAS still wants ld >= 1
  const std::vector<float> before = p.c;
  RunGemm(p, 1.0f, 2.0f);
  for (size_t i = 0; i < p.c.size(); ++i) EXPECT_EQ(p.c[i], 2.0f * before[i]);
}

TEST_P(GemmCpuTest, SameCallGivesSameBits) {
  for (const Shape& s : kOddShapes) {
    Problem first = MakeProblem(s, 0, 5);
    Problem second = first;
    RunGemm(first, 1.0f, 0.0f);
    RunGemm(second, 1.0f, 0.0f);
    EXPECT_EQ(0, std::memcmp(first.c.data(), second.c.data(), first.c.size() * sizeof(float)))
        << "m=" << s.m << " n=" << s.n << " k=" << s.k;
  }
}

// The MLP's bias + ReLU and ReLU-derivative steps ride on the GEMM (fused into
// dmlp's tiles, a pass after BLIS): the same bits as the GEMM alone, then the step.
TEST_P(GemmCpuTest, TheEpilogueGivesTheGemmsBitsThenTheStep) {
  const Shape s{70, 300, 600, false, true};
  Problem plain = MakeProblem(s, 2, 61);
  Problem fused = plain;
  std::vector<float> bias(static_cast<size_t>(s.n)), mask(plain.c.size());
  Fill(bias, 62);
  Fill(mask, 63);
  RunGemm(plain, 1.0f, 0.0f);
  for (const GemmEpilogue& e : {GemmEpilogue::AddBiasRelu(bias.data()),
                                GemmEpilogue::MaskByPositive(mask.data(), static_cast<size_t>(plain.ldc))}) {
    std::vector<float> want = plain.c;
    for (int i = 0; i < s.m; ++i) {
      for (int j = 0; j < s.n; ++j) {
        float& x = want[static_cast<size_t>(i) * plain.ldc + j];
        const float v = x + bias[j];
        x = e.kind == GemmEpilogue::Kind::kAddBiasRelu ? (v <= 0.0f ? 0.0f : v)
                                                       : (mask[static_cast<size_t>(i) * plain.ldc + j] > 0.0f ? x : 0.0f);
      }
    }
    Sgemm(s.transpose_a, s.transpose_b, s.m, s.n, s.k, 1.0f, fused.a.data(), fused.lda, fused.b.data(), fused.ldb,
          0.0f, fused.c.data(), fused.ldc, e);
    EXPECT_EQ(0, std::memcmp(want.data(), fused.c.data(), want.size() * sizeof(float)))
        << "epilogue " << static_cast<int>(e.kind);
  }
}

// The trainer's thread policy (CPUs shared among the ranks, so the count changes
// with NUM_PROCESSES) is only allowed because the bits do not depend on it: MLP shapes (batch
// shard 64/512, widths up to 2048) and odd sizes, every transpose pair, 1 to 3 threads.
TEST_P(GemmCpuTest, ThreadCountDoesNotChangeBits) {
  std::vector<Shape> shapes = {{512, 1024, 512, false, false}, {64, 2048, 1024, false, true},
                               {1024, 1024, 64, true, false},  {512, 10, 1024, false, false},
                               {333, 777, 1001, false, true},  {515, 1023, 67, true, false},
                               {17, 2051, 2049, true, true},   {1031, 1029, 771, false, false}};
  for (const Shape& s : shapes) {
    std::vector<float> reference;
    for (int threads : {1, 2, 3}) {
      ASSERT_TRUE(InitCpuGemm(threads, GetParam()).ok());
      ASSERT_EQ(CpuGemmDescription().threads, threads);
      Problem p = MakeProblem(s, 1, 77);
      RunGemm(p, 1.0f, 0.0f);
      if (reference.empty()) {
        reference = p.c;
      } else {
        EXPECT_EQ(0, std::memcmp(reference.data(), p.c.data(), p.c.size() * sizeof(float)))
            << "threads " << threads << " vs 1: m=" << s.m << " n=" << s.n << " k=" << s.k
            << " ta=" << s.transpose_a << " tb=" << s.transpose_b;
      }
    }
  }
}

TEST(GemmCpuChoiceTest, BlisDescriptionNamesLibraryKernelAndThreads) {
  ASSERT_TRUE(InitCpuGemm(2, CpuGemm::kBlis).ok());
  const CpuGemmInfo& info = CpuGemmDescription();
  EXPECT_EQ(info.library.rfind("blis ", 0), 0u) << info.library;
  EXPECT_EQ(info.threads, 2);
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  EXPECT_EQ(info.kernel, avx512 ? "skx" : avx2 ? "haswell" : "generic");
  // The fingerprint names the exact file: this build's, resolved (no symlink left).
  char resolved[PATH_MAX];
  ASSERT_NE(realpath(DMLP_BLIS_SO, resolved), nullptr);
  EXPECT_EQ(info.file, resolved);
  EXPECT_EQ(info.isa, info.kernel);
  EXPECT_EQ(CpuGemmOrder(CpuGemm::kBlis), info.kernel);
}

TEST(GemmCpuChoiceTest, DmlpDescriptionNamesTheOrderAndTheKernelThatRuns) {
  for (CpuGemm choice : {CpuGemm::kAuto, CpuGemm::kAvx512, CpuGemm::kAvx2, CpuGemm::kScalar}) {
    const std::string word = kCpuGemmChoices[static_cast<int>(choice)];
    Result<CpuGemm> parsed = ParseCpuGemm(word);
    const bool runs = choice == CpuGemm::kAuto || choice == CpuGemm::kScalar ||
                      (choice == CpuGemm::kAvx512 && __builtin_cpu_supports("avx512f")) ||
                      (choice == CpuGemm::kAvx2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
    if (!runs) {
      ASSERT_FALSE(parsed.ok()) << word;
      EXPECT_EQ(parsed.status().code(), "ENV_INVALID") << word;
      continue;
    }
    ASSERT_TRUE(parsed.ok()) << word;
    ASSERT_EQ(parsed.value(), choice);
    ASSERT_TRUE(InitCpuGemm(2, choice).ok()) << word;
    const CpuGemmInfo& info = CpuGemmDescription();
    EXPECT_EQ(info.kernel, "fma-chain-k-ascending");
    EXPECT_EQ(CpuGemmOrder(choice), info.kernel);
    EXPECT_EQ(info.threads, 2);
    EXPECT_EQ(info.file, "");
    const std::string fastest = __builtin_cpu_supports("avx512f") ? "avx512"
                                : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "avx2"
                                                                                                   : "scalar";
    EXPECT_EQ(info.isa, choice == CpuGemm::kAuto ? fastest : word);
  }
}

TEST(GemmCpuChoiceTest, AnUnknownWordIsEnvInvalidNamingTheChoices) {
  for (const char* word : {"", "AVX512", "avx-512", "openblas", "auto "}) {
    Result<CpuGemm> parsed = ParseCpuGemm(word);
    ASSERT_FALSE(parsed.ok()) << word;
    EXPECT_EQ(parsed.status().code(), "ENV_INVALID");
    EXPECT_NE(parsed.status().ToString().find("auto or avx512 or avx2 or scalar or blis"), std::string::npos)
        << parsed.status().ToString();
  }
}

TEST(BlisPathBesideExecutable, TakesThePathFromTheExecutablesFolder) {
  EXPECT_EQ(BlisPathBesideExecutable("/opt/kit/bin/dmlp-train", "../lib/libblis.so.4"),
            "/opt/kit/bin/../lib/libblis.so.4");
  EXPECT_EQ(BlisPathBesideExecutable("/dmlp-train", "libblis.so.4"), "/libblis.so.4");
  EXPECT_EQ(BlisPathBesideExecutable("dmlp-train", "libblis.so.4"), "./libblis.so.4");
  EXPECT_EQ(BlisPathBesideExecutable("/opt/kit/bin/dmlp-train", "/usr/lib/libblis.so.4"),
            "/usr/lib/libblis.so.4");
}

// BLIS picks its kernel once, at its first initialization; if something in the
// process got there first with another kernel, InitCpuGemm must refuse rather
// than run (and record) a kernel it did not pin. Run in a fresh process.
TEST(GemmCpuDeathTest, RefusesWhenBlisWasInitializedWithAnotherKernel) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "generic is the pinned kernel here";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void* blis = dlopen(DMLP_BLIS_SO, RTLD_NOW | RTLD_LOCAL);
        if (blis == nullptr) std::exit(3);
        auto arch_string = reinterpret_cast<const char* (*)(int)>(dlsym(blis, "bli_arch_string"));
        int generic = 0;
        while (std::strcmp(arch_string(generic), "generic") != 0) ++generic;
        setenv("BLIS_ARCH_TYPE", std::to_string(generic).c_str(), 1);
        reinterpret_cast<void (*)()>(dlsym(blis, "bli_init"))();
        unsetenv("BLIS_ARCH_TYPE");
        Status status = InitCpuGemm(1, CpuGemm::kBlis);
        std::fprintf(stderr, "%s\n", status.ToString().c_str());
        std::exit(status.code() == "GEMM_INIT_FAILED" ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "GEMM_INIT_FAILED: BLIS runs sub-configuration generic");
}

}  // namespace
}  // namespace dmlp
