// The libm-free transforms behind data and init: accuracy against double libm
// over dense sweeps, and golden bits so that any change to the definition (an
// operation reordered, a coefficient changed, an FMA sneaking in) is caught.
// Measured with g++ 12 -O2 -ffp-contract=off (full sweeps, see the figures
// printed by each test): LogPositive <= 1.92 ulp over all normal floats and
// <= 1.65 ulp on (0, 1]; SinCosTwoPi <= 9.0e-8 absolute; Box-Muller z <= 5.5e-7
// absolute (about one float ulp at |z| = 5.8, the largest z).
#include "trainer/sample_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace dmlp {
namespace {

// |got - want| in units of the float spacing at want.
double UlpError(float got, double want) {
  const float rounded = static_cast<float>(want);
  const double ulp = std::nextafter(std::fabs(rounded), INFINITY) - std::fabs(rounded);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

TEST(SampleMathTest, LogIsWithinTwoUlpOnTheUniformGrid) {
  // Every u1 the data can produce is k * 2^-24, k in [1, 2^24]: all small k,
  // then a stride over the rest.
  double max_ulp = 0, max_rel = 0;
  for (uint32_t k = 1; k <= (1u << 24); k += (k < (1u << 16) ? 1 : 13)) {
    const float x = static_cast<float>(k) * 0x1p-24f;
    const double want = std::log(static_cast<double>(x));
    const float got = LogPositive(x);
    if (want == 0) {
      EXPECT_EQ(FloatBits(got), 0u);
      continue;
    }
    max_ulp = std::fmax(max_ulp, UlpError(got, want));
    max_rel = std::fmax(max_rel, std::fabs(got - want) / std::fabs(want));
  }
  std::printf("LogPositive on (0,1]: max %.3f ulp, max relative error %.3g\n", max_ulp, max_rel);
  EXPECT_LE(max_ulp, 2.0);
  EXPECT_LE(max_rel, 2.5e-7);  // near u1 = 1 too, which r = sqrt(-2 ln u1) needs
}

TEST(SampleMathTest, LogIsWithinTwoUlpOverAllNormalFloats) {
  double max_ulp = 0;
  for (uint32_t bits = 0x00800000u; bits < 0x7F800000u; bits += 997) {
    const float x = FloatFromBits(bits);
    const double want = std::log(static_cast<double>(x));
    if (want != 0) max_ulp = std::fmax(max_ulp, UlpError(LogPositive(x), want));
  }
  std::printf("LogPositive on normal floats: max %.3f ulp\n", max_ulp);
  EXPECT_LE(max_ulp, 2.0);
}

TEST(SampleMathTest, SinCosAreAccurateOnEveryQuadrant) {
  double max_error = 0;
  for (uint32_t k = 0; k < (1u << 24); k += 5) {
    const float u = static_cast<float>(k) * 0x1p-24f;
    float s, c;
    SinCosTwoPi(u, &s, &c);
    const double angle = 2 * M_PI * static_cast<double>(u);
    max_error = std::fmax(max_error, std::fabs(s - std::sin(angle)));
    max_error = std::fmax(max_error, std::fabs(c - std::cos(angle)));
  }
  std::printf("SinCosTwoPi: max absolute error %.3g\n", max_error);
  EXPECT_LE(max_error, 1.5e-7);
}

TEST(SampleMathTest, BoxMullerMatchesDoubleLibm) {
  double max_error = 0;
  for (uint32_t i = 0; i < 1024; ++i) {
    for (uint32_t j = 0; j < 1024; ++j) {
      // Spread over the 24-bit grids, including both ends of u1 and u2.
      const uint32_t w0 = i == 1023 ? 0xFFFFFFFFu : (i * 16384u + (i * 37u & 16383u)) << 8;
      const uint32_t w1 = j == 1023 ? 0xFFFFFFFFu : (j * 16384u + (j * 91u & 16383u)) << 8;
      float z0, z1;
      BoxMuller(w0, w1, &z0, &z1);
      const double u1 = ((w0 >> 8) + 1.0) * 0x1p-24, u2 = (w1 >> 8) * 0x1p-24;
      const double r = std::sqrt(-2 * std::log(u1));
      max_error = std::fmax(max_error, std::fabs(z0 - r * std::cos(2 * M_PI * u2)));
      max_error = std::fmax(max_error, std::fabs(z1 - r * std::sin(2 * M_PI * u2)));
    }
  }
  std::printf("BoxMuller: max absolute error of z %.3g\n", max_error);
  EXPECT_LE(max_error, 1e-6);
}

TEST(SampleMathTest, UniformEndsGiveFiniteNormalsAndPositiveZero) {
  float z0, z1;
  BoxMuller(0xFFFFFFFFu, 0, &z0, &z1);  // u1 = 1: r = +0, never -0
  EXPECT_EQ(FloatBits(z0), 0u);
  EXPECT_EQ(FloatBits(z1), 0u);
  BoxMuller(0, 0, &z0, &z1);  // u1 = 2^-24: the largest radius
  EXPECT_NEAR(z0, std::sqrt(48 * std::log(2.0)), 1e-6);
  EXPECT_EQ(FloatBits(z1), 0u);
}

TEST(SampleMathTest, GoldenBitsOfTheDefinition) {
  struct LogCase { float x; uint32_t bits; };
  for (const LogCase& c : {LogCase{0.5f, 0xbf317218u}, LogCase{0x1p-24f, 0xc1851592u},
                           LogCase{0x1.fffffep-1f, 0xb3800000u}, LogCase{3.0f, 0x3f8c9f54u},
                           LogCase{1e30f, 0x428a27b5u}})
    EXPECT_EQ(FloatBits(LogPositive(c.x)), c.bits) << c.x;
  struct SinCosCase { float u; uint32_t sin_bits, cos_bits; };
  for (const SinCosCase& c : {SinCosCase{0.125f, 0x3f3504f4u, 0x3f3504f4u},
                              SinCosCase{0x1.333334p-2f, 0x3f737870u, 0xbe9e377cu},
                              SinCosCase{0x1.6a0902p-1f, 0xbf76c192u, 0xbe885806u},
                              SinCosCase{0x1.fffffep-1f, 0xb4c90fdbu, 0x3f800000u}}) {
    float s, c2;
    SinCosTwoPi(c.u, &s, &c2);
    EXPECT_EQ(FloatBits(s), c.sin_bits) << c.u;
    EXPECT_EQ(FloatBits(c2), c.cos_bits) << c.u;
  }
  struct PairCase { uint32_t w0, w1, z0_bits, z1_bits; };
  for (const PairCase& c : {PairCase{0x00000000u, 0x00000000u, 0x40b89456u, 0x00000000u},
                            PairCase{0x12345678u, 0x9abcdef0u, 0xbfe92f3au, 0xbfb3937au},
                            PairCase{0xdeadbeefu, 0x0badf00du, 0x3f01ada0u, 0x3e18e75eu},
                            PairCase{0x00000100u, 0xc0000000u, 0x00000000u, 0xc0b4b170u}}) {
    float z0, z1;
    BoxMuller(c.w0, c.w1, &z0, &z1);
    EXPECT_EQ(FloatBits(z0), c.z0_bits) << std::hex << c.w0 << " " << c.w1;
    EXPECT_EQ(FloatBits(z1), c.z1_bits) << std::hex << c.w0 << " " << c.w1;
  }
}

TEST(SampleMathTest, NormalPairUsesWordsInOrder) {
  const PhiloxBlock block{0x12345678u, 0x9abcdef0u, 0xdeadbeefu, 0x0badf00du};
  float a, b;
  NormalPair(block, 0, &a, &b);
  EXPECT_EQ(FloatBits(a), 0xbfe92f3au);
  NormalPair(block, 1, &a, &b);
  EXPECT_EQ(FloatBits(a), 0x3f01ada0u);
  EXPECT_EQ(FloatBits(b), 0x3e18e75eu);
}

}  // namespace
}  // namespace dmlp
