// dmlp's SGEMM by the order rule of ordered_sgemm.h: packing, blocking,
// threads and the three micro-kernels. The AVX-512 and AVX2 kernels are
// compiled for their ISA by function attributes (the rest of the file stays
// baseline x86-64), and only called after GemmIsaSupported said yes.
#include "trainer/cpu/ordered_sgemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace dmlp {
namespace {

// Rows of C per packed A block (a multiple of every kernel's 12, 6 or 4 rows)
// and the most columns per packed B block. A task's columns are one B block,
// as wide as the threads allow, so that A (read from memory) is packed as few
// times as possible: the A block (96 x 256 floats, 96 KiB) and the B block
// (at most 256 x 1024, 1 MiB) stay in L2.
constexpr int kMBlock = 96;
constexpr int kNBlockMax = 1024;

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

struct ScalarKernel {
  static constexpr int kMr = 4, kNr = 8;
  static void Run(int kc, const float* ap, const float* bp, float* c, size_t ldc, bool first) {
    float acc[kMr][kNr];
    for (int r = 0; r < kMr; ++r)
      for (int j = 0; j < kNr; ++j) acc[r][j] = first ? 0.0f : c[r * ldc + j];
    for (int kk = 0; kk < kc; ++kk, ap += kMr, bp += kNr)
      for (int r = 0; r < kMr; ++r)
        for (int j = 0; j < kNr; ++j) acc[r][j] = std::fma(ap[r], bp[j], acc[r][j]);
    for (int r = 0; r < kMr; ++r)
      for (int j = 0; j < kNr; ++j) c[r * ldc + j] = acc[r][j];
  }
};

#if defined(__x86_64__) && defined(__GNUC__)
#define DMLP_SGEMM_X86 1

__attribute__((target("avx2,fma"))) void RunAvx2(int kc, const float* ap, const float* bp, float* c,
                                                  size_t ldc, bool first) {
  constexpr int kMr = 6;
  __m256 acc0[kMr], acc1[kMr];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    acc0[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc);
    acc1[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8);
  }
  for (int kk = 0; kk < kc; ++kk, ap += kMr, bp += 16) {
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

__attribute__((target("avx512f,avx2,fma"))) void RunAvx512(int kc, const float* ap, const float* bp,
                                                            float* c, size_t ldc, bool first) {
  constexpr int kMr = 12;
  __m512 acc0[kMr], acc1[kMr];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    acc0[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc);
    acc1[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + 16);
  }
  for (int kk = 0; kk < kc; ++kk, ap += kMr, bp += 32) {
    const __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512 a = _mm512_set1_ps(ap[r]);
      acc0[r] = _mm512_fmadd_ps(a, b0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(a, b1, acc1[r]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc0[r]);
    _mm512_storeu_ps(c + r * ldc + 16, acc1[r]);
  }
}

struct Avx2Kernel {
  static constexpr int kMr = 6, kNr = 16;
  static void Run(int kc, const float* ap, const float* bp, float* c, size_t ldc, bool first) {
    RunAvx2(kc, ap, bp, c, ldc, first);
  }
};

struct Avx512Kernel {
  static constexpr int kMr = 12, kNr = 32;
  static void Run(int kc, const float* ap, const float* bp, float* c, size_t ldc, bool first) {
    RunAvx512(kc, ap, bp, c, ldc, first);
  }
};
#endif

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

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols:
// the packers' transposing copy, in 4 x 4 blocks of SSE registers (baseline
// x86-64) where they fit, element by element at the edges. A pure copy.
void TransposeCopy(const float* src, size_t src_stride, int rows, int cols, float* dst,
                   size_t dst_stride) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* s0 = src + r * src_stride;
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

// op(A)[i0 + i][p0 + kk] for i < mc, kk < kc, into kMr-row panels, each
// kc x kMr (panel[kk * kMr + r]); rows past mc are zeros (their results are
// never stored). A pure copy.
template <int kMr>
void PackA(const Operands& g, int i0, int mc, int p0, int kc, float* out) {
  for (int ip = 0; ip < mc; ip += kMr) {
    const int rows = std::min(kMr, mc - ip);
    float* panel = out + static_cast<size_t>(ip) * kc;
    if (!g.transpose_a) {
      TransposeCopy(g.a + static_cast<size_t>(i0 + ip) * g.lda + p0, g.lda, rows, kc, panel, kMr);
      for (int kk = 0; kk < kc; ++kk)
        for (int r = rows; r < kMr; ++r) panel[kk * kMr + r] = 0.0f;
    } else {
      for (int kk = 0; kk < kc; ++kk) {
        const float* row = g.a + static_cast<size_t>(p0 + kk) * g.lda + i0 + ip;
        for (int r = 0; r < rows; ++r) panel[kk * kMr + r] = row[r];
        for (int r = rows; r < kMr; ++r) panel[kk * kMr + r] = 0.0f;
      }
    }
  }
}

// op(B)[p0 + kk][j0 + j] for kk < kc, j < nc, into kNr-column panels, each kc x kNr;
// columns past nc are zeros (never stored). A pure copy.
template <int kNr>
void PackB(const Operands& g, int j0, int nc, int p0, int kc, float* out) {
  for (int jp = 0; jp < nc; jp += kNr) {
    const int cols = std::min(kNr, nc - jp);
    float* panel = out + static_cast<size_t>(jp / kNr) * kc * kNr;
    if (!g.transpose_b) {
      for (int kk = 0; kk < kc; ++kk) {
        const float* row = g.b + static_cast<size_t>(p0 + kk) * g.ldb + j0 + jp;
        for (int j = 0; j < cols; ++j) panel[kk * kNr + j] = row[j];
        for (int j = cols; j < kNr; ++j) panel[kk * kNr + j] = 0.0f;
      }
    } else {
      TransposeCopy(g.b + static_cast<size_t>(j0 + jp) * g.ldb + p0, g.ldb, cols, kc, panel, kNr);
      for (int kk = 0; kk < kc; ++kk)
        for (int j = cols; j < kNr; ++j) panel[kk * kNr + j] = 0.0f;
    }
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

// One task: S for rows [r0, r0 + rows) and columns [j0, j0 + nc) of C. For
// each k-block in order, B's block is packed once and used by every row block.
template <typename Kernel>
void RunTask(const Operands& g, int r0, int rows, int j0, int nc) {
  constexpr int kMr = Kernel::kMr, kNr = Kernel::kNr;
  static thread_local PackSpace space;
  const size_t a_floats = static_cast<size_t>(kMBlock) * kGemmKBlock;
  float* packed_a = space.Get(a_floats + static_cast<size_t>(kNBlockMax) * kGemmKBlock);
  float* packed_b = packed_a + a_floats;
  alignas(64) float tile[kMr * kNr];
  // K in equal blocks of at most kGemmKBlock (a speed choice: no bit depends on it).
  const int blocks = (g.k + kGemmKBlock - 1) / kGemmKBlock;
  const int block_k = (g.k + blocks - 1) / blocks;
  for (int p0 = 0; p0 < g.k; p0 += block_k) {
    const int kc = std::min(block_k, g.k - p0);
    const bool first = p0 == 0;
    PackB<kNr>(g, j0, nc, p0, kc, packed_b);
    for (int i0 = r0; i0 < r0 + rows; i0 += kMBlock) {
      const int mc = std::min(kMBlock, r0 + rows - i0);
      PackA<kMr>(g, i0, mc, p0, kc, packed_a);
      for (int jp = 0; jp < nc; jp += kNr) {
        const int cols = std::min(kNr, nc - jp);
        const float* b_panel = packed_b + static_cast<size_t>(jp / kNr) * kc * kNr;
        for (int ip = 0; ip < mc; ip += kMr) {
          const int panel_rows = std::min(kMr, mc - ip);
          const float* a_panel = packed_a + static_cast<size_t>(ip) * kc;
          float* c = g.c + static_cast<size_t>(i0 + ip) * g.ldc + j0 + jp;
          if (panel_rows == kMr && cols == kNr) {
            Kernel::Run(kc, a_panel, b_panel, c, g.ldc, first);
            continue;
          }
          // An edge tile runs in `tile`: only C's own elements are read and written.
          if (!first)
            for (int r = 0; r < panel_rows; ++r)
              for (int j = 0; j < cols; ++j) tile[r * kNr + j] = c[r * g.ldc + j];
          Kernel::Run(kc, a_panel, b_panel, tile, kNr, first);
          for (int r = 0; r < panel_rows; ++r)
            for (int j = 0; j < cols; ++j) c[r * g.ldc + j] = tile[r * kNr + j];
        }
      }
    }
  }
}

// S into g.c for every element. A task is a block of columns (one per
// thread, at most kNBlockMax wide, whole tiles) over all rows, so B is packed
// once per k-block and A once per thread; when there are fewer column blocks
// than threads, the rows are cut too (in whole tiles).
template <typename Kernel>
void Chains(const Operands& g, int threads) {
  constexpr int kMr = Kernel::kMr, kNr = Kernel::kNr;
  threads = std::max(1, threads);
  const int column_tiles = (g.n + kNr - 1) / kNr;
  const int block = std::min(kNBlockMax, (column_tiles + threads - 1) / threads * kNr);
  const int column_tasks = (g.n + block - 1) / block;
  const int row_tiles = (g.m + kMr - 1) / kMr;
  const int row_groups = std::min(row_tiles, std::max(1, (threads + column_tasks - 1) / column_tasks));
  const int group_rows = (row_tiles + row_groups - 1) / row_groups * kMr;
  const int tasks = column_tasks * row_groups;
  auto task = [&g, column_tasks, group_rows, block](int t) {
    const int r0 = t / column_tasks * group_rows, j0 = t % column_tasks * block;
    if (r0 >= g.m) return;
    RunTask<Kernel>(g, r0, std::min(group_rows, g.m - r0), j0, std::min(block, g.n - j0));
  };
  threads = std::max(1, std::min(threads, tasks));
  if (threads == 1) {
    KnownMxcsr mxcsr;
    for (int t = 0; t < tasks; ++t) task(t);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    KnownMxcsr mxcsr;  // in every worker thread
#pragma omp for schedule(static)
    for (int t = 0; t < tasks; ++t) task(t);
  }
#else
  KnownMxcsr mxcsr;
  for (int t = 0; t < tasks; ++t) task(t);
#endif
}

void ChainsFor(GemmIsa isa, const Operands& g, int threads) {
  switch (isa) {
#ifdef DMLP_SGEMM_X86
    case GemmIsa::kAvx512: return Chains<Avx512Kernel>(g, threads);
    case GemmIsa::kAvx2: return Chains<Avx2Kernel>(g, threads);
#else
    case GemmIsa::kAvx512:
    case GemmIsa::kAvx2: std::abort();
#endif
    case GemmIsa::kScalar: return Chains<ScalarKernel>(g, threads);
  }
  std::abort();
}

}  // namespace

const char* GemmIsaName(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::kScalar: return "scalar";
    case GemmIsa::kAvx2: return "avx2";
    case GemmIsa::kAvx512: return "avx512";
  }
  return "unknown";
}

bool GemmIsaSupported(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::kScalar: return true;
#ifdef DMLP_SGEMM_X86
    case GemmIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmIsa::kAvx512: return __builtin_cpu_supports("avx512f");
#else
    case GemmIsa::kAvx2:
    case GemmIsa::kAvx512: return false;
#endif
  }
  return false;
}

void OrderedSgemm(GemmIsa isa, int threads, bool transpose_a, bool transpose_b, int m, int n, int k,
                  float alpha, const float* a, size_t lda, const float* b, size_t ldb, float beta,
                  float* c, size_t ldc) {
  if (!GemmIsaSupported(isa) || m < 0 || n < 0 || k < 0) std::abort();
  if (m == 0 || n == 0) return;
  const bool plain = alpha == 1.0f && beta == 0.0f;
  // The chains' values S go straight into C when C = S; else into a scratch
  // matrix, and alpha and beta are applied once, after the chains.
  std::vector<float> scratch;
  Operands g{transpose_a, transpose_b, m, n, k, a, lda, b, ldb, c, ldc};
  if (!plain) {
    scratch.assign(static_cast<size_t>(m) * n, 0.0f);
    g.c = scratch.data();
    g.ldc = static_cast<size_t>(n);
  }
  if (k == 0) {
    if (plain)
      for (int i = 0; i < m; ++i) std::fill_n(c + static_cast<size_t>(i) * ldc, n, 0.0f);
  } else {
    ChainsFor(isa, g, threads);
  }
  if (plain) return;
  KnownMxcsr mxcsr;
  for (int i = 0; i < m; ++i) {
    float* row = c + static_cast<size_t>(i) * ldc;
    const float* sums = scratch.data() + static_cast<size_t>(i) * n;
    for (int j = 0; j < n; ++j) {
      const float scaled = alpha * sums[j];
      row[j] = beta == 0.0f ? scaled : scaled + beta * row[j];
    }
  }
}

}  // namespace dmlp
