// dmlp's ExpF and LogF (trainer/math/exp_log.h) against the running glibc's
// expf and logf, bit for bit, on EVERY float input: all 2^32 bit patterns
// (NaNs, infinities, zeros of both signs and subnormals included), the ranges
// the trainer reaches (exp of x <= 0, log of [1, CLASSES]) in tests of their
// own. One changed constant, table entry, fusion or rounding fails here.
//
// glibc's x86-64 libm runs the build these functions copy (its FMA build) only
// where the CPU has FMA and AVX2; elsewhere it runs its SSE2 build, which rounds
// differently on some inputs. There the tests count those inputs, print the
// count and skip: the comparison would be with another algorithm.
#include "trainer/math/exp_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "trainer/math/cpu_clones.h"

namespace dmlp {
namespace {

// The first few inputs on which two functions differ, and how many there are.
struct Mismatches {
  uint64_t count = 0;
  std::vector<uint32_t> first;
};

// Under the sanitizers (tools/test-all.sh's second build) every input is
// instrumented and DFma is a libm call: there the loops take every 61st input,
// enough for what those builds look for; the bits are proven in the main build.
#if defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kInputStride = 61;
#else
constexpr uint64_t kInputStride = 1;
#endif

// Each loop is compiled per ISA so DFma is one instruction where the CPU has
// it (about 30 s for 2^32 inputs per function on one core); the baseline clone
// calls libm's fma, which rounds the same.
DMLP_CPU_FMA_CLONES void CountExpMismatches(uint64_t begin, uint64_t end, Mismatches* out) {
  for (uint64_t bits = begin; bits < end; bits += kInputStride) {
    const float x = FloatFromBits(static_cast<uint32_t>(bits));
    if (FloatBits(ExpF(x)) == FloatBits(expf(x))) continue;
    if (out->count++ < 8) out->first.push_back(static_cast<uint32_t>(bits));
  }
}

DMLP_CPU_FMA_CLONES void CountLogMismatches(uint64_t begin, uint64_t end, Mismatches* out) {
  for (uint64_t bits = begin; bits < end; bits += kInputStride) {
    const float x = FloatFromBits(static_cast<uint32_t>(bits));
    if (FloatBits(LogF(x)) == FloatBits(logf(x))) continue;
    if (out->count++ < 8) out->first.push_back(static_cast<uint32_t>(bits));
  }
}

using CountFn = void (*)(uint64_t, uint64_t, Mismatches*);

// The bit patterns [begin, end) split over the machine's cores; the sum of the parts.
Mismatches CountOver(CountFn count, uint64_t begin, uint64_t end) {
  const uint64_t workers = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t piece = (end - begin + workers - 1) / workers;
  std::vector<Mismatches> parts(workers);
  std::vector<std::thread> threads;
  for (uint64_t w = 0; w < workers; ++w) {
    const uint64_t first = std::min(end, begin + w * piece);
    const uint64_t last = std::min(end, first + piece);
    threads.emplace_back(count, first, last, &parts[w]);
  }
  Mismatches total;
  for (uint64_t w = 0; w < workers; ++w) {
    threads[w].join();
    total.count += parts[w].count;
    for (uint32_t bits : parts[w].first)
      if (total.first.size() < 8) total.first.push_back(bits);
  }
  return total;
}

std::string Describe(const Mismatches& found) {
  std::ostringstream text;
  text << found.count << " input(s) differ, first:" << std::hex;
  for (uint32_t bits : found.first) text << " 0x" << bits;
  return text.str();
}

// Whether glibc's libm runs its FMA build of expf and logf here (its ifunc
// selector asks for both features).
bool GlibcRunsFmaBuild() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
#else
  return true;  // one build elsewhere; the comparison decides
#endif
}

void ExpectEqualToGlibc(const char* function, CountFn count, uint64_t begin, uint64_t end) {
  const Mismatches found = CountOver(count, begin, end);
  if (!GlibcRunsFmaBuild())
    GTEST_SKIP() << "this CPU lacks FMA or AVX2, so glibc runs its SSE2 build of " << function
                 << ", not the FMA build dmlp copies; against it " << Describe(found);
  EXPECT_EQ(found.count, 0u) << function << ": " << Describe(found);
}

constexpr uint64_t kPositiveZero = 0x00000000;
constexpr uint64_t kNegativeZero = 0x80000000;
constexpr uint64_t kAllPatterns = uint64_t{1} << 32;

// exp(z - max) in the softmax: every x <= 0, i.e. +0 and every pattern with the
// sign bit (-0, negatives, -inf, negative NaNs).
TEST(ExpLogTest, ExpOfEveryNonPositiveInputIsGlibcs) {
  ExpectEqualToGlibc("expf", CountExpMismatches, kPositiveZero, kPositiveZero + 1);
  ExpectEqualToGlibc("expf", CountExpMismatches, kNegativeZero, kAllPatterns);
}

TEST(ExpLogTest, ExpOfEveryPositiveInputIsGlibcs) {
  ExpectEqualToGlibc("expf", CountExpMismatches, kPositiveZero + 1, kNegativeZero);
}

// log(sum of exponentials) in the softmax: the sum lies in [1, CLASSES].
TEST(ExpLogTest, LogOfEveryInputInOneToTwoToThe20IsGlibcs) {
  ExpectEqualToGlibc("logf", CountLogMismatches, FloatBits(1.0f), uint64_t{FloatBits(0x1p20f)} + 1);
}

TEST(ExpLogTest, LogOfEveryOtherInputIsGlibcs) {
  ExpectEqualToGlibc("logf", CountLogMismatches, 0, FloatBits(1.0f));
  ExpectEqualToGlibc("logf", CountLogMismatches, uint64_t{FloatBits(0x1p20f)} + 1, kAllPatterns);
}

// The special values, spelled out so a failure reads without a bit pattern.
TEST(ExpLogTest, SpecialValuesAreGlibcs) {
  EXPECT_EQ(FloatBits(ExpF(-INFINITY)), FloatBits(0.0f));
  EXPECT_EQ(FloatBits(ExpF(INFINITY)), FloatBits(INFINITY));
  EXPECT_EQ(FloatBits(ExpF(-0.0f)), FloatBits(1.0f));
  EXPECT_EQ(FloatBits(ExpF(89.0f)), FloatBits(INFINITY));
  EXPECT_EQ(FloatBits(ExpF(-104.0f)), FloatBits(0.0f));
  EXPECT_TRUE(std::isnan(ExpF(NAN)));
  EXPECT_EQ(FloatBits(LogF(1.0f)), FloatBits(0.0f));
  EXPECT_EQ(FloatBits(LogF(0.0f)), FloatBits(-INFINITY));
  EXPECT_EQ(FloatBits(LogF(-0.0f)), FloatBits(-INFINITY));
  EXPECT_EQ(FloatBits(LogF(INFINITY)), FloatBits(INFINITY));
  EXPECT_TRUE(std::isnan(LogF(-1.0f)));
  EXPECT_TRUE(std::isnan(LogF(NAN)));
}

}  // namespace
}  // namespace dmlp
