// defines: Operands, PrefetchBytes, TransposeCopy, CopyRowPieces512, TransposeCopy512,
//          PanelsFromRows, PanelsFromColumns, PackA, PackB, PackSpace
//
// The packers of dmlp's SGEMM (trainer/cpu/ordered_sgemm.h): op(A) into
// kMr-row panels and op(B) into kNr-column panels, each kc x width, the
// micro-kernels' streams. Every packer is a pure copy: padding only along i
// and j (lanes computed and thrown away), never along k, no scaling. Included
// by ordered_sgemm.cc alone.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "trainer/cpu/gemm_epilogue.h"

namespace dmlp {
namespace sgemm {

struct Operands {
  bool transpose_a, transpose_b;
  int m, n, k;
  const float* a;
  size_t lda;
  const float* b;
  size_t ldb;
  float* c;  // receives S, the chains' values
  size_t ldc;
  // Applied to each tile of C after its last k-block (null: none).
  const GemmEpilogue* epilogue;
};

// The bytes [p, p + bytes) on their way into the cache. The packers read
// their source rows (from L3 or memory) ahead of the copy: each row is a page
// of its own when the stride is 4 KiB, where the hardware's prefetchers start
// cold. A prefetch reads nothing into a register: no bit depends on it.
inline void PrefetchBytes(const float* p, size_t bytes) {
  const char* first = reinterpret_cast<const char*>(p);
  for (size_t offset = 0; offset < bytes; offset += 64) _mm_prefetch(first + offset, _MM_HINT_T0);
}

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols:
// the packers' transposing copy, in 4 x 4 blocks of SSE registers (baseline
// x86-64) where they fit, element by element at the edges. A pure copy.
inline void TransposeCopy(const float* src, size_t src_stride, int rows, int cols, float* dst,
                   size_t dst_stride) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* s0 = src + r * src_stride;
    for (int q = 4; q < 8 && r + q < rows; ++q) PrefetchBytes(s0 + q * src_stride, sizeof(float) * cols);
    int c = 0;
    for (; c + 4 <= cols; c += 4) {
      __m128 row0 = _mm_loadu_ps(s0 + c), row1 = _mm_loadu_ps(s0 + src_stride + c);
      __m128 row2 = _mm_loadu_ps(s0 + 2 * src_stride + c), row3 = _mm_loadu_ps(s0 + 3 * src_stride + c);
      _MM_TRANSPOSE4_PS(row0, row1, row2, row3);
      float* d = dst + c * dst_stride + r;
      _mm_storeu_ps(d, row0);
      _mm_storeu_ps(d + dst_stride, row1);
      _mm_storeu_ps(d + 2 * dst_stride, row2);
      _mm_storeu_ps(d + 3 * dst_stride, row3);
    }
    for (; c < cols; ++c)
      for (int q = 0; q < 4; ++q) dst[c * dst_stride + r + q] = s0[q * src_stride + c];
  }
  for (; r < rows; ++r)
    for (int c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
}

#if defined(__x86_64__) && defined(__GNUC__)
// The AVX-512 kernel's packers (compiled for AVX-512 by attribute, called only
// where that kernel runs): the same copies in 64-byte registers. Measured on
// train_bench.py's shapes: packing B took 5 % of a GEMM with 16-byte pieces, 4 % with these;
// the transposing copy half the time of TransposeCopy's 4 x 4 blocks.

// dst + q * dst_step <- row + q * kWidth, kWidth floats each, for q < pieces (kWidth a multiple of 16).
template <int kWidth>
__attribute__((target("avx512f"))) void CopyRowPieces512(const float* row, int pieces, float* dst,
                                                         size_t dst_step) {
  static_assert(kWidth % 16 == 0, "whole registers");
  for (int q = 0; q < pieces; ++q)
#pragma GCC unroll 4
    for (int v = 0; v < kWidth; v += 16) _mm512_storeu_ps(dst + q * dst_step + v, _mm512_loadu_ps(row + q * kWidth + v));
}

// TransposeCopy's contract (dst[c * dst_stride + r] = src[r * src_stride + c]),
// for rows <= 16: blocks of 16 columns as 16 x 16 register transposes (rows
// past `rows` are zeros that the masked stores leave out), the last columns
// by TransposeCopy. A pure copy. (GCC 12's unpack and shuffle intrinsics
// start from _mm512_undefined_ps, which its -Wmaybe-uninitialized flags.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) inline void TransposeCopy512(const float* src, size_t src_stride, int rows,
                                                              int cols, float* dst, size_t dst_stride) {
  const __mmask16 lanes = static_cast<__mmask16>((1u << rows) - 1);
  int c = 0;
  for (; c + 16 <= cols; c += 16) {
    __m512 x[16], y[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) x[r] = r < rows ? _mm512_loadu_ps(src + r * src_stride + c) : _mm512_setzero_ps();
    // Three rounds of shuffles: pairs of rows, then fours, then 128-bit lanes
    // twice; x[j] ends as column c + j.
#pragma GCC unroll 8
    for (int r = 0; r < 16; r += 2) {
      y[r] = _mm512_unpacklo_ps(x[r], x[r + 1]);
      y[r + 1] = _mm512_unpackhi_ps(x[r], x[r + 1]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < 16; r += 4) {
      x[r] = _mm512_shuffle_ps(y[r], y[r + 2], 0x44);
      x[r + 1] = _mm512_shuffle_ps(y[r], y[r + 2], 0xEE);
      x[r + 2] = _mm512_shuffle_ps(y[r + 1], y[r + 3], 0x44);
      x[r + 3] = _mm512_shuffle_ps(y[r + 1], y[r + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      y[q] = _mm512_shuffle_f32x4(x[q], x[4 + q], 0x88);
      y[4 + q] = _mm512_shuffle_f32x4(x[q], x[4 + q], 0xDD);
      y[8 + q] = _mm512_shuffle_f32x4(x[8 + q], x[12 + q], 0x88);
      y[12 + q] = _mm512_shuffle_f32x4(x[8 + q], x[12 + q], 0xDD);
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      x[q] = _mm512_shuffle_f32x4(y[q], y[8 + q], 0x88);
      x[8 + q] = _mm512_shuffle_f32x4(y[q], y[8 + q], 0xDD);
      x[4 + q] = _mm512_shuffle_f32x4(y[4 + q], y[12 + q], 0x88);
      x[12 + q] = _mm512_shuffle_f32x4(y[4 + q], y[12 + q], 0xDD);
    }
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) _mm512_mask_storeu_ps(dst + (c + j) * dst_stride, lanes, x[j]);
  }
  if (c < cols) TransposeCopy(src + c, src_stride, rows, cols - c, dst + c * dst_stride, dst_stride);
}
#pragma GCC diagnostic pop
#endif

// src[kk * stride + x] for kk < kc, x < extent, into panels of kWidth
// columns, each kc x kWidth (panel q holds x in [q * kWidth, (q + 1) * kWidth));
// lanes past extent are zeros (never stored). Row by row across all panels,
// so that the source is read in order (panel by panel, each row's few bytes
// were a cache miss: a 4 KiB stride the prefetchers do not follow). A pure copy.
template <int kWidth, bool kAvx512>
void PanelsFromRows(const float* src, size_t stride, int kc, int extent, float* out) {
  const int full = extent / kWidth, rest = extent % kWidth;
  const size_t panel_floats = static_cast<size_t>(kc) * kWidth;
  for (int kk = 0; kk < kc; ++kk) {
    const float* row = src + static_cast<size_t>(kk) * stride;
    // A few rows ahead of the copy: more when a row's share is only a line or two.
    const int ahead = extent * sizeof(float) >= 1024 ? 2 : 8;
    if (kk + ahead < kc) PrefetchBytes(row + ahead * stride, sizeof(float) * extent);
    float* dst = out + static_cast<size_t>(kk) * kWidth;
#if defined(__x86_64__) && defined(__GNUC__)
    if constexpr (kAvx512 && kWidth % 16 == 0) {
      CopyRowPieces512<kWidth>(row, full, dst, panel_floats);
    } else
#endif
    {
      for (int q = 0; q < full; ++q) std::memcpy(dst + q * panel_floats, row + q * kWidth, sizeof(float) * kWidth);
    }
    if (rest > 0) {
      float* last = dst + full * panel_floats;
      std::memcpy(last, row + full * kWidth, sizeof(float) * rest);
      std::fill(last + rest, last + kWidth, 0.0f);
    }
  }
}

// src[x * stride + kk] for x < extent, kk < kc (a transposed operand), into
// the same panels: each panel's rows of src are read in order along kk.
template <int kWidth, bool kAvx512>
void PanelsFromColumns(const float* src, size_t stride, int kc, int extent, float* out) {
  for (int x0 = 0; x0 < extent; x0 += kWidth) {
    const int lanes = std::min(kWidth, extent - x0);
    float* panel = out + static_cast<size_t>(x0) * kc;
    const float* rows = src + static_cast<size_t>(x0) * stride;
#if defined(__x86_64__) && defined(__GNUC__)
    if constexpr (kAvx512) {
      for (int r = 0; r < lanes; r += 16)  // 16 source rows (panel lanes) at a time
        TransposeCopy512(rows + r * stride, stride, std::min(16, lanes - r), kc, panel + r, kWidth);
    } else
#endif
    {
      TransposeCopy(rows, stride, lanes, kc, panel, kWidth);
    }
    for (int kk = 0; kk < kc; ++kk) std::fill(panel + kk * kWidth + lanes, panel + (kk + 1) * kWidth, 0.0f);
  }
}

// op(A)[i0 + i][p0 + kk] for i < mc, kk < kc, into Kernel::kMr-row panels,
// each kc x kMr (panel[kk * kMr + r]). A pure copy. (Kernel::kAvx512: the
// kernel runs only where AVX-512 does, and so may its packers.)
template <typename Kernel>
void PackA(const Operands& g, int i0, int mc, int p0, int kc, float* out) {
  if (g.transpose_a) {
    PanelsFromRows<Kernel::kMr, Kernel::kAvx512>(g.a + static_cast<size_t>(p0) * g.lda + i0, g.lda, kc, mc, out);
  } else {
    PanelsFromColumns<Kernel::kMr, Kernel::kAvx512>(g.a + static_cast<size_t>(i0) * g.lda + p0, g.lda, kc, mc, out);
  }
}

// op(B)[p0 + kk][j0 + j] for kk < kc, j < nc, into Kernel::kNr-column panels, each kc x kNr. A pure copy.
template <typename Kernel>
void PackB(const Operands& g, int j0, int nc, int p0, int kc, float* out) {
  if (g.transpose_b) {
    PanelsFromColumns<Kernel::kNr, Kernel::kAvx512>(g.b + static_cast<size_t>(j0) * g.ldb + p0, g.ldb, kc, nc, out);
  } else {
    PanelsFromRows<Kernel::kNr, Kernel::kAvx512>(g.b + static_cast<size_t>(p0) * g.ldb + j0, g.ldb, kc, nc, out);
  }
}

// 64-byte aligned packing space, one per thread, grown on demand.
struct PackSpace {
  float* data = nullptr;
  size_t floats = 0;
  ~PackSpace() { std::free(data); }
  float* Get(size_t wanted) {
    if (wanted > floats) {
      std::free(data);
      data = static_cast<float*>(std::aligned_alloc(64, (wanted * sizeof(float) + 63) / 64 * 64));
      if (data == nullptr) std::abort();
      floats = wanted;
    }
    return data;
  }
};

}  // namespace sgemm
}  // namespace dmlp
