// defines: KnownMxcsr, ScalarKernel, Avx2Kernel, Avx512Kernel, DMLP_SGEMM_X86
//
// The micro-kernels of dmlp's SGEMM (trainer/cpu/ordered_sgemm.h has the
// order rule they all obey). The AVX-512 and AVX2 kernels are compiled for
// their ISA by function attributes (everything else stays baseline x86-64)
// and only called after GemmIsaSupported said yes. Included by
// ordered_sgemm.cc alone.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstddef>

#include "trainer/cpu/gemm_epilogue.h"

namespace dmlp {
namespace sgemm {

// MXCSR: round to nearest, every exception masked, flush-to-zero and
// denormals-are-zero off; the caller's value comes back on scope exit.
class KnownMxcsr {
 public:
  KnownMxcsr() : saved_(_mm_getcsr()) { _mm_setcsr(0x1F80); }
  ~KnownMxcsr() { _mm_setcsr(saved_); }
  KnownMxcsr(const KnownMxcsr&) = delete;
  KnownMxcsr& operator=(const KnownMxcsr&) = delete;

 private:
  unsigned saved_;
};

// A micro-kernel: the kMr x kNr tile of C at c (row stride ldc) continues its
// chains over kc values of k: acc = fma(ap[kk][r], bp[kk][j], acc) for kk = 0, 1, ...
// ap is packed kc x kMr (ap[kk * kMr + r]: one contiguous stream, whatever
// A's layout), bp kc x kNr. first: the chains start at +0 and C is
// not read; else they start from C (the running value of the earlier blocks).
// epilogue (null but after the last k-block): gemm_epilogue.h's steps, placed
// at the tile's first element, applied to the tile as the chains end.

struct ScalarKernel {
  static constexpr int kMr = 4, kNr = 8;
  static constexpr bool kAvx512 = false;  // its packers: baseline x86-64 (or any CPU)
  static constexpr bool kShortPanels = false;
  static void Run(int kc, const float* ap, const float* bp, float* c, size_t ldc, bool first,
                  const GemmEpilogue* epilogue) {
    float acc[kMr][kNr];
    for (int r = 0; r < kMr; ++r)
      for (int j = 0; j < kNr; ++j) acc[r][j] = first ? 0.0f : c[r * ldc + j];
    for (int kk = 0; kk < kc; ++kk, ap += kMr, bp += kNr)
      for (int r = 0; r < kMr; ++r)
        for (int j = 0; j < kNr; ++j) acc[r][j] = std::fma(ap[r], bp[j], acc[r][j]);
    for (int r = 0; r < kMr; ++r)
      for (int j = 0; j < kNr; ++j) c[r * ldc + j] = acc[r][j];
    if (epilogue) ApplyGemmEpilogue(*epilogue, kMr, kNr, c, ldc);
  }
};

#if defined(__x86_64__) && defined(__GNUC__)
#define DMLP_SGEMM_X86 1

// Rows of B's panel the vector kernels prefetch ahead of the one they use
// (bench: 8 rows took the AVX-512 kernel streaming B from L2 from 76 % to 86 %
// of the FMA peak). A prefetch reads nothing into a register: no bit depends on it.
constexpr int kPrefetchRows = 8;

__attribute__((target("avx2,fma"))) inline void RunAvx2(int kc, const float* ap, const float* bp, float* c,
                                                  size_t ldc, bool first) {
  constexpr int kMr = 6;
  __m256 acc0[kMr], acc1[kMr];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    acc0[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc);
    acc1[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8);
  }
  for (int kk = 0; kk < kc; ++kk, ap += kMr, bp += 16) {
    _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchRows * 16), _MM_HINT_T0);
    const __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      const __m256 a = _mm256_broadcast_ss(ap + r);
      acc0[r] = _mm256_fmadd_ps(a, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(a, b1, acc1[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc0[r]);
    _mm256_storeu_ps(c + r * ldc + 8, acc1[r]);
  }
}

// gemm_epilogue.h's steps on kRows rows of 32 lanes in registers, each the
// same IEEE add, compare or select as ApplyGemmEpilogue's loops: relu's
// `v <= 0 ? 0 : v` is a blend where v <= 0 (ordered: a NaN stays), the mask
// keeps lanes whose mask element is > 0 (ordered: a NaN mask gives 0).
template <int kRows>
__attribute__((target("avx512f"))) inline void EpilogueAvx512(const GemmEpilogue& e, __m512* acc0, __m512* acc1) {
  const __m512 zero = _mm512_setzero_ps();
  if (e.kind == GemmEpilogue::Kind::kMaskByPositive) {
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const float* mask = e.mask + r * e.mask_stride;
      acc0[r] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(mask), zero, _CMP_GT_OQ), acc0[r]);
      acc1[r] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(mask + 16), zero, _CMP_GT_OQ), acc1[r]);
    }
    return;
  }
  const __m512 bias0 = _mm512_loadu_ps(e.bias), bias1 = _mm512_loadu_ps(e.bias + 16);
  const bool relu = e.kind == GemmEpilogue::Kind::kAddBiasRelu;
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    acc0[r] = _mm512_add_ps(acc0[r], bias0);
    acc1[r] = _mm512_add_ps(acc1[r], bias1);
    if (relu) {
      acc0[r] = _mm512_mask_mov_ps(acc0[r], _mm512_cmp_ps_mask(acc0[r], zero, _CMP_LE_OQ), zero);
      acc1[r] = _mm512_mask_mov_ps(acc1[r], _mm512_cmp_ps_mask(acc1[r], zero, _CMP_LE_OQ), zero);
    }
  }
}

// kRows <= 12 rows of the tile (an A panel of 12 rows, of which the first
// kRows are A's: the last panel of an m that is not a multiple of 12 runs on
// C itself, without the edge tile's copies or the 12-row cost).
template <int kRows>
__attribute__((target("avx512f,avx2,fma"))) inline void RunAvx512(int kc, const float* ap, const float* bp,
                                                            float* c, size_t ldc, bool first,
                                                            const GemmEpilogue* epilogue) {
  constexpr int kMr = 12;
  static_assert(kRows >= 1 && kRows <= kMr, "rows of one panel");
  __m512 acc0[kRows], acc1[kRows];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    acc0[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc);
    acc1[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + 16);
  }
  for (int kk = 0; kk < kc; ++kk, ap += kMr, bp += 32) {
    // B's panel streams from L2 (packed, contiguous): fetch 8 rows ahead.
    _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchRows * 32), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(bp + kPrefetchRows * 32 + 16), _MM_HINT_T0);
    const __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 a = _mm512_set1_ps(ap[r]);
      acc0[r] = _mm512_fmadd_ps(a, b0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(a, b1, acc1[r]);
    }
  }
  if (epilogue) EpilogueAvx512<kRows>(*epilogue, acc0, acc1);
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc0[r]);
    _mm512_storeu_ps(c + r * ldc + 16, acc1[r]);
  }
}

struct Avx2Kernel {
  static constexpr int kMr = 6, kNr = 16;
  static constexpr bool kAvx512 = false;
  static constexpr bool kShortPanels = false;  // its edge panels run in a tile
  static void Run(int kc, const float* ap, const float* bp, float* c, size_t ldc, bool first,
                  const GemmEpilogue* epilogue) {
    RunAvx2(kc, ap, bp, c, ldc, first);
    if (epilogue) ApplyGemmEpilogue(*epilogue, kMr, kNr, c, ldc);  // from L1, just stored
  }
};

struct Avx512Kernel {
  static constexpr int kMr = 12, kNr = 32;
  static constexpr bool kAvx512 = true;
  static constexpr bool kShortPanels = true;
  static void Run(int kc, const float* ap, const float* bp, float* c, size_t ldc, bool first,
                  const GemmEpilogue* epilogue) {
    RunAvx512<12>(kc, ap, bp, c, ldc, first, epilogue);
  }
  // The first `rows` (< 12) rows of a full-width tile.
  static void RunShort(int rows, int kc, const float* ap, const float* bp, float* c, size_t ldc, bool first,
                       const GemmEpilogue* epilogue) {
    switch (rows) {
      case 1: return RunAvx512<1>(kc, ap, bp, c, ldc, first, epilogue);
      case 2: return RunAvx512<2>(kc, ap, bp, c, ldc, first, epilogue);
      case 3: return RunAvx512<3>(kc, ap, bp, c, ldc, first, epilogue);
      case 4: return RunAvx512<4>(kc, ap, bp, c, ldc, first, epilogue);
      case 5: return RunAvx512<5>(kc, ap, bp, c, ldc, first, epilogue);
      case 6: return RunAvx512<6>(kc, ap, bp, c, ldc, first, epilogue);
      case 7: return RunAvx512<7>(kc, ap, bp, c, ldc, first, epilogue);
      case 8: return RunAvx512<8>(kc, ap, bp, c, ldc, first, epilogue);
      case 9: return RunAvx512<9>(kc, ap, bp, c, ldc, first, epilogue);
      case 10: return RunAvx512<10>(kc, ap, bp, c, ldc, first, epilogue);
      default: return RunAvx512<11>(kc, ap, bp, c, ldc, first, epilogue);
    }
  }
};
#endif

}  // namespace sgemm
}  // namespace dmlp
