// defines: DMLP_CPU_CLONES, DMLP_CPU_FMA_CLONES
//
// Marks a host loop to be compiled for AVX-512, AVX2 and baseline x86-64, the
// variant picked at load time (GCC's target_clones). Only for loops whose every
// operation is one IEEE-rounded add, multiply, divide, square root, compare or
// select, with contraction off (-ffp-contract=off): then the vector width
// changes the speed, never a bit. Empty where GCC's ifunc dispatch is not
// available or not wanted (clang, other CPUs, AddressSanitizer builds).
//
// DMLP_CPU_FMA_CLONES is the same for loops that also call FFma (an explicit,
// once-rounded fused multiply-add, trainer/math/device_macros.h): "avx2" alone does
// not enable FMA instructions, so its clones are the x86-64-v4 (AVX-512) and
// x86-64-v3 (AVX2 + FMA) levels; the baseline clone calls libm's fmaf, which
// rounds the same, slowly.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define DMLP_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
// GCC 11 (the host compiler of CUDA 11.8's nvcc, tools/gpu-sim.sh) has no
// dispatcher for arch= clones: the baseline alone there, the same bits.
#if __GNUC__ >= 12
#define DMLP_CPU_FMA_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DMLP_CPU_FMA_CLONES
#endif
#else
#define DMLP_CPU_CLONES
#define DMLP_CPU_FMA_CLONES
#endif
