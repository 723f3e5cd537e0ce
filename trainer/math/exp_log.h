// defines: ExpF, LogF
//
// dmlp's own float exp and log, the same bits on the host (g++) and on the
// device (nvcc): the softmax cross-entropy of both platforms calls them
// (trainer/cpu/mlp_cpu.cc, trainer/cuda/softmax_xent.cu), so their losses and
// gradients are equal bit for bit.
//
// The bits are glibc's expf and logf (glibc 2.28 to 2.42: ARM's
// optimized-routines, sysdeps/ieee754/flt-32/e_expf.c, e_exp2f_data.c, e_logf.c,
// e_logf_data.c), so the CPU platform's receipts did not change when it moved
// from std::exp/std::log to these. On x86-64 glibc picks one of two builds at
// load time: with FMA and AVX2 it runs a copy compiled with -mfma -mavx2, where
// GCC fused each product into the sum that uses it; without, a plain SSE2
// build. The two round differently on some inputs. These functions are the FMA
// build, its fusions written out as DFma (read off the machine code of libm.so.6,
// Debian 12's glibc 2.36), every other operation one rounded DAdd/DSub/DMul
// (trainer/math/device_macros.h: never contracted, on either side).
// tests/unit/exp_log_test.cc compares them with the running glibc on every float.
//
// Tables: function-local static constexpr arrays, so one definition serves
// both compilers; nvcc places them in device memory (.global in PTX), loaded
// once. (Without `static`, nvcc built them in each thread's local memory on
// every call.)
#pragma once

#include <cstdint>

#include "trainer/math/device_macros.h"

namespace dmlp {

/// e^x as glibc's expf (its FMA build) returns it, for every float x (NaN quieted).
DMLP_HOST_DEVICE DMLP_INLINE float ExpF(float x) {
  // tab[i] = bits(2^(i/32)) - (i << 47): 2^(k/32) is double(tab[k%32] + (k << 47)).
  static constexpr uint64_t kTable[32] = {
      0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
      0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
      0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
      0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
      0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
      0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
      0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
      0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
  };
  constexpr double kInvLn2N = 0x1.71547652b82fep+0 * 32;  // 32 / ln 2
  constexpr double kShift = 0x1.8p+52;  // adding it rounds to an integer, ties to even
  constexpr double kC0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32;
  constexpr double kC1 = 0x1.ebfce50fac4f3p-3 / 32 / 32;
  constexpr double kC2 = 0x1.62e42ff0c52d6p-1 / 32;

  const uint32_t abstop = (FloatBits(x) >> 20) & 0x7ff;
  if (abstop >= (0x42b00000u >> 20)) {  // |x| >= 88, inf or NaN
    if (FloatBits(x) == 0xff800000u) return 0.0f;   // exp(-inf) = +0
    if (abstop >= 0x7f8u) return FAdd(x, x);        // +inf, or NaN quieted
    if (x > 0x1.62e42ep6f) return FloatFromBits(0x7f800000u);    // overflow: +inf
    if (x < -0x1.9fe368p6f) return 0.0f;                         // below 2^-150: +0
    if (x < -0x1.9d1d9ep6f) return FloatFromBits(0x00000001u);  // 2^-149 (glibc's errno path)
  }
  // x * 32/ln2 = k + r, k rounded to nearest even, r in [-1/2, 1/2]: the FMA
  // build fuses the product into both uses (the shift and r), so r is exact.
  const double xd = static_cast<double>(x);
  const double shifted = DFma(kInvLn2N, xd, kShift);
  const uint64_t ki = DoubleBits(shifted);
  const double kd = DSub(shifted, kShift);
  const double r = DFma(kInvLn2N, xd, -kd);
  // exp(x) = 2^(k/32) * 2^(r/32) ~= s * (C0 r^3 + C1 r^2 + C2 r + 1)
  const double s = DoubleFromBits(kTable[ki % 32] + (ki << 47));
  const double z = DFma(kC0, r, kC1);
  const double r2 = DMul(r, r);
  double y = DFma(kC2, r, 1.0);
  y = DFma(z, r2, y);
  return static_cast<float>(DMul(y, s));
}

/// log(x) as glibc's logf (its FMA build) returns it, for every float x (NaN quieted).
DMLP_HOST_DEVICE DMLP_INLINE float LogF(float x) {
  // {1/c, log c} for c near the centre of each of 16 subintervals of [OFF, 2 OFF).
  static constexpr double kInvC[16] = {
      0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0,  0x1.3c995b0b80385p+0,
      0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,  0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
      0x1.0953f419900a7p+0, 0x1p+0,               0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
      0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1,
  };
  static constexpr double kLogC[16] = {
      -0x1.57bf7808caadep-2, -0x1.2bef0a7c06ddbp-2, -0x1.01eae7f513a67p-2, -0x1.b31d8a68224e9p-3,
      -0x1.6574f0ac07758p-3, -0x1.1aa2bc79c81p-3,   -0x1.a4e76ce8c0e5ep-4, -0x1.1973c5a611cccp-4,
      -0x1.252f438e10c1ep-5, 0x0p+0,                0x1.aa5aa5df25984p-5,  0x1.c5e53aa362eb4p-4,
      0x1.526e57720db08p-3,  0x1.bc2860d22477p-3,   0x1.1058bc8a07ee1p-2,  0x1.4043057b6ee09p-2,
  };
  constexpr double kLn2 = 0x1.62e42fefa39efp-1;
  constexpr double kA0 = -0x1.00ea348b88334p-2;
  constexpr double kA1 = 0x1.5575b0be00b6ap-2;
  constexpr double kA2 = -0x1.ffffef20a4123p-2;
  constexpr uint32_t kOff = 0x3f330000;

  uint32_t ix = FloatBits(x);
  if (ix == 0x3f800000u) return 0.0f;  // log(1) = +0 in every rounding mode
  if (ix - 0x00800000u >= 0x7f800000u - 0x00800000u) {  // below 2^-126, inf or NaN
    if (ix * 2 == 0) return FloatFromBits(0xff800000u);  // log(+-0) = -inf
    if (ix == 0x7f800000u) return x;                     // log(inf) = inf
    if ((ix & 0x80000000u) || ix * 2 >= 0xff000000u)    // negative or NaN
      return FDiv(FSub(x, x), FSub(x, x));               // glibc's NaN, bit for bit
    ix = FloatBits(FMul(x, 0x1p23f)) - (23u << 23);      // subnormal: normalize
  }
  // x = 2^k z with z in [OFF, 2 OFF), exactly; log(x) = log1p(z/c - 1) + log(c) + k ln2.
  const uint32_t tmp = ix - kOff;
  const int i = static_cast<int>((tmp >> 19) % 16);
  const int k = static_cast<int32_t>(tmp) >> 23;  // arithmetic shift
  const uint32_t iz = ix - (tmp & 0xff800000u);
  const double z = static_cast<double>(FloatFromBits(iz));
  const double r = DFma(z, kInvC[i], -1.0);
  const double y0 = DFma(static_cast<double>(k), kLn2, kLogC[i]);
  const double r2 = DMul(r, r);
  double y = DFma(kA1, r, kA2);
  y = DFma(kA0, r2, y);
  y = DFma(y, r2, DAdd(y0, r));
  return static_cast<float>(y);
}

}  // namespace dmlp
