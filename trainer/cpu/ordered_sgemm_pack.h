// defines: Operands, PrefetchBytes, TransposeCopy, PanelsFromRows, PanelsFromColumns, PackA,
//          PackB, PackSpace
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

// src[kk * stride + x] for kk < kc, x < extent, into panels of kWidth
// columns, each kc x kWidth (panel q holds x in [q * kWidth, (q + 1) * kWidth));
// lanes past extent are zeros (never stored). Row by row across all panels,
// so that the source is read in order (panel by panel, each row's few bytes
// were a cache miss: a 4 KiB stride the prefetchers do not follow). A pure copy.
template <int kWidth>
void PanelsFromRows(const float* src, size_t stride, int kc, int extent, float* out) {
  const int full = extent / kWidth, rest = extent % kWidth;
  const size_t panel_floats = static_cast<size_t>(kc) * kWidth;
  for (int kk = 0; kk < kc; ++kk) {
    const float* row = src + static_cast<size_t>(kk) * stride;
    // A few rows ahead of the copy: more when a row's share is only a line or two.
    const int ahead = extent * sizeof(float) >= 1024 ? 2 : 8;
    if (kk + ahead < kc) PrefetchBytes(row + ahead * stride, sizeof(float) * extent);
    float* dst = out + static_cast<size_t>(kk) * kWidth;
    for (int q = 0; q < full; ++q) std::memcpy(dst + q * panel_floats, row + q * kWidth, sizeof(float) * kWidth);
    if (rest > 0) {
      float* last = dst + full * panel_floats;
      std::memcpy(last, row + full * kWidth, sizeof(float) * rest);
      std::fill(last + rest, last + kWidth, 0.0f);
    }
  }
}

// src[x * stride + kk] for x < extent, kk < kc (a transposed operand), into
// the same panels: each panel's rows of src are read in order along kk.
template <int kWidth>
void PanelsFromColumns(const float* src, size_t stride, int kc, int extent, float* out) {
  for (int x0 = 0; x0 < extent; x0 += kWidth) {
    const int lanes = std::min(kWidth, extent - x0);
    float* panel = out + static_cast<size_t>(x0) * kc;
    TransposeCopy(src + static_cast<size_t>(x0) * stride, stride, lanes, kc, panel, kWidth);
    for (int kk = 0; kk < kc; ++kk) std::fill(panel + kk * kWidth + lanes, panel + (kk + 1) * kWidth, 0.0f);
  }
}

// op(A)[i0 + i][p0 + kk] for i < mc, kk < kc, into kMr-row panels, each
// kc x kMr (panel[kk * kMr + r]). A pure copy.
template <int kMr>
void PackA(const Operands& g, int i0, int mc, int p0, int kc, float* out) {
  if (g.transpose_a) {
    PanelsFromRows<kMr>(g.a + static_cast<size_t>(p0) * g.lda + i0, g.lda, kc, mc, out);
  } else {
    PanelsFromColumns<kMr>(g.a + static_cast<size_t>(i0) * g.lda + p0, g.lda, kc, mc, out);
  }
}

// op(B)[p0 + kk][j0 + j] for kk < kc, j < nc, into kNr-column panels, each kc x kNr. A pure copy.
template <int kNr>
void PackB(const Operands& g, int j0, int nc, int p0, int kc, float* out) {
  if (g.transpose_b) {
    PanelsFromColumns<kNr>(g.b + static_cast<size_t>(j0) * g.ldb + p0, g.ldb, kc, nc, out);
  } else {
    PanelsFromRows<kNr>(g.b + static_cast<size_t>(p0) * g.ldb + j0, g.ldb, kc, nc, out);
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
