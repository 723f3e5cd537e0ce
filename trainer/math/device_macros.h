// defines: DMLP_HOST_DEVICE, DMLP_INLINE, FAdd, FSub, FMul, FDiv, FSqrt, FFma, FloatBits,
//          FloatFromBits, DAdd, DSub, DMul, DFma, DoubleBits, DoubleFromBits
//
// What lets one header serve the CPU platform (g++) and the CUDA platform
// (nvcc, host and device) with the SAME BITS.
//
// Every float operation whose result reaches data, init or Adam goes through
// the helpers below. IEEE 754 makes +, -, *, / and sqrt correctly rounded, so
// an expression evaluated as the same sequence of these operations gives the
// same bits on any conforming machine. Two things break that, and both are
// closed here:
//  * Contraction: a*b+c fused into one FMA rounds once instead of twice. The
//    host build compiles with -ffp-contract=off (top-level CMakeLists.txt);
//    nvcc contracts device code by default (-fmad=true), so on the device the
//    helpers call the explicit round-to-nearest intrinsics __fadd_rn,
//    __fmul_rn, ..., which nvcc documents as never merged into an FMA.
//    Where the definition HAS an FMA (the code XLA:CPU compiles for jax, which
//    dmlp reproduces), FFma writes it out: one rounding on every platform.
//  * Approximate division/sqrt: nvcc's -prec-div=false/-prec-sqrt=false (and
//    -use_fast_math) replace `/` and sqrtf; __fdiv_rn and __fsqrt_rn are always
//    IEEE. Do not compile these headers with -ftz=true either: the functions
//    never create subnormals from their documented inputs, but a flushed
//    subnormal input would differ from the host.
// The host side also needs FLT_EVAL_METHOD == 0 (float math done in float, as
// on x86-64 SSE and AArch64), checked below.
#pragma once

#include <cfloat>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define DMLP_HOST_DEVICE __host__ __device__
#define DMLP_INLINE __forceinline__
#elif defined(__GNUC__)
// Forced on the host too: a vectorized loop compiled per ISA (trainer/math/cpu_clones.h)
// only gets FMA and vector code if the math is inlined into each clone.
#define DMLP_HOST_DEVICE
#define DMLP_INLINE inline __attribute__((always_inline))
#else
#define DMLP_HOST_DEVICE
#define DMLP_INLINE inline
#endif

#if !defined(__CUDA_ARCH__) && defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "dmlp needs float arithmetic evaluated in float (FLT_EVAL_METHOD == 0)"
#endif

#if defined(__clang__) && !defined(__CUDA_ARCH__)
// Clang honours the pragma even where a target was built without -ffp-contract=off.
#pragma clang fp contract(off)
#endif

namespace dmlp {

/// a + b, rounded to nearest, never fused.
DMLP_HOST_DEVICE DMLP_INLINE float FAdd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

/// a - b, rounded to nearest, never fused.
DMLP_HOST_DEVICE DMLP_INLINE float FSub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

/// a * b, rounded to nearest, never fused.
DMLP_HOST_DEVICE DMLP_INLINE float FMul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

/// a / b, IEEE division whatever -prec-div says.
DMLP_HOST_DEVICE DMLP_INLINE float FDiv(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

/// sqrt(a), IEEE square root whatever -prec-sqrt says. Host: compiled to sqrtss.
DMLP_HOST_DEVICE DMLP_INLINE float FSqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return __builtin_sqrtf(a);
#endif
}

/// a * b + c rounded once (IEEE fusedMultiplyAdd): the FMAs XLA:CPU's code makes,
/// written out (trainer/math/xla_special.h). Host: an FMA instruction where the
/// function is compiled for one (DMLP_CPU_FMA_CLONES), else libm's fmaf, which
/// is also correctly rounded: slower, never different.
DMLP_HOST_DEVICE DMLP_INLINE float FFma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}

/// The IEEE bits of a float.
DMLP_HOST_DEVICE DMLP_INLINE uint32_t FloatBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

/// The float with the given IEEE bits.
DMLP_HOST_DEVICE DMLP_INLINE float FloatFromBits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// The same helpers in double, for functions that compute in double and round
// once to float at the end (trainer/math/exp_log.h): the same argument, the
// device's __dadd_rn, __dmul_rn, __fma_rn are never contracted or fused.

/// a + b in double, rounded to nearest, never fused.
DMLP_HOST_DEVICE DMLP_INLINE double DAdd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

/// a - b in double, rounded to nearest, never fused.
DMLP_HOST_DEVICE DMLP_INLINE double DSub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

/// a * b in double, rounded to nearest, never fused.
DMLP_HOST_DEVICE DMLP_INLINE double DMul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

/// a * b + c in double, rounded once. Host: an FMA instruction where the
/// function is compiled for one, else libm's fma: slower, never different.
DMLP_HOST_DEVICE DMLP_INLINE double DFma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return __builtin_fma(a, b, c);
#endif
}

/// The IEEE bits of a double.
DMLP_HOST_DEVICE DMLP_INLINE uint64_t DoubleBits(double value) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(value));
#else
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

/// The double with the given IEEE bits.
DMLP_HOST_DEVICE DMLP_INLINE double DoubleFromBits(uint64_t bits) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

}  // namespace dmlp
