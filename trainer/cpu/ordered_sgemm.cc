// dmlp's SGEMM by the order rule of ordered_sgemm.h: blocking, threads and
// the choice of kernel. The micro-kernels are in ordered_sgemm_kernels.h,
// the packers in ordered_sgemm_pack.h.
#include "trainer/cpu/ordered_sgemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "trainer/cpu/ordered_sgemm_kernels.h"
#include "trainer/cpu/ordered_sgemm_pack.h"

namespace dmlp {
namespace {

using sgemm::KnownMxcsr;
using sgemm::Operands;
using sgemm::PackA;
using sgemm::PackB;
using sgemm::PackSpace;
using sgemm::ScalarKernel;
#ifdef DMLP_SGEMM_X86
using sgemm::Avx2Kernel;
using sgemm::Avx512Kernel;
#endif

// Sizes (speed settings only: no bit depends on them; bench/cpu_floor measured
// them on the MLP's shapes). The most columns per packed B block: the B block
// (at most kGemmKBlock x 1024 floats, 1 MiB) stays in L2, an A panel
// (kMr x kGemmKBlock, 12 KiB) in L1.
constexpr int kNBlockMax = 1024;
// Rows of A a lone thread packs at a time (whole panels of every kernel: 12,
// 6 and 4 rows): 192 x kGemmKBlock floats, 192 KiB, beside the B block in L2.
constexpr int kMcBlock = 192;
// Panels of A per chunk, RunChunkTasks' unit of work in a k-block (24 rows).
constexpr int kChunkPanels = 2;
// Pauses (tens of nanoseconds each) a thread of RunChunkTasks spins before it yields.
constexpr int kSpinsBeforeYield = 2000;

// The rows x cols tile of C at c (row stride ldc) on its way into the cache.
inline void PrefetchTile(const float* c, size_t ldc, int rows, int cols) {
  for (int r = 0; r < rows; ++r) sgemm::PrefetchBytes(c + r * ldc, sizeof(float) * cols);
}

// The first `rows` (< kMr) rows of a full-width tile, on C itself (kernels
// with kShortPanels; the others run such a panel as an edge tile).
template <typename Kernel>
void RunShortPanel(int rows, int kc, const float* a_panel, const float* b_panel, float* c, size_t ldc,
                   bool first, const GemmEpilogue* epilogue) {
  if constexpr (Kernel::kShortPanels) {
    Kernel::RunShort(rows, kc, a_panel, b_panel, c, ldc, first, epilogue);
  } else {
    std::abort();
  }
}

// S for rows [i0, i0 + mc) and columns [j0, j0 + nc) of C over one k-block
// (kc values from its start; first: the chains start at +0; last: the chains
// end here, and g's epilogue follows on each tile), from A's packed block
// (its kMr-row panels) and B's (its kNr-column panels). Each A panel (in L1)
// runs along the whole B block, whose panels stream from L2, and each C tile
// (and in the last block its mask) is prefetched while the tile before it computes.
template <typename Kernel>
void MultiplyBlocks(const Operands& g, const float* packed_a, int i0, int mc, const float* packed_b, int j0,
                    int nc, int kc, bool first, bool last) {
  const GemmEpilogue* epilogue = last ? g.epilogue : nullptr;
  const bool masked = epilogue && epilogue->kind == GemmEpilogue::Kind::kMaskByPositive;
  constexpr int kMr = Kernel::kMr, kNr = Kernel::kNr;
  alignas(64) float tile[kMr * kNr];
  for (int ip = 0; ip < mc; ip += kMr) {
    const int panel_rows = std::min(kMr, mc - ip);
    const float* a_panel = packed_a + static_cast<size_t>(ip) * kc;
    float* c_row = g.c + static_cast<size_t>(i0 + ip) * g.ldc + j0;
    for (int jp = 0; jp < nc; jp += kNr) {
      const int cols = std::min(kNr, nc - jp);
      const float* b_panel = packed_b + static_cast<size_t>(jp / kNr) * kc * kNr;
      float* c = c_row + jp;
      if (jp + kNr < nc) {
        const int next_cols = std::min(kNr, nc - jp - kNr);
        if (!first) PrefetchTile(c + kNr, g.ldc, panel_rows, next_cols);
        if (masked) PrefetchTile(epilogue->At(i0 + ip, j0 + jp + kNr).mask, epilogue->mask_stride, panel_rows, next_cols);
      }
      const GemmEpilogue here = epilogue ? epilogue->At(i0 + ip, j0 + jp) : GemmEpilogue::None();
      const GemmEpilogue* tile_epilogue = epilogue ? &here : nullptr;
      if (panel_rows == kMr && cols == kNr) {
        Kernel::Run(kc, a_panel, b_panel, c, g.ldc, first, tile_epilogue);
      } else if (Kernel::kShortPanels && cols == kNr) {
        RunShortPanel<Kernel>(panel_rows, kc, a_panel, b_panel, c, g.ldc, first, tile_epilogue);
      } else {
        // An edge tile runs in `tile`: only C's own elements are read and written.
        if (!first)
          for (int r = 0; r < panel_rows; ++r)
            for (int j = 0; j < cols; ++j) tile[r * kNr + j] = c[r * g.ldc + j];
        Kernel::Run(kc, a_panel, b_panel, tile, kNr, first, nullptr);
        for (int r = 0; r < panel_rows; ++r)
          for (int j = 0; j < cols; ++j) c[r * g.ldc + j] = tile[r * kNr + j];
        if (tile_epilogue) ApplyGemmEpilogue(here, panel_rows, cols, c, g.ldc);
      }
    }
  }
}

// K in equal blocks of at most kGemmKBlock (a speed choice: no bit depends on it).
int KBlock(int k) {
  const int blocks = (k + kGemmKBlock - 1) / kGemmKBlock;
  return (k + blocks - 1) / blocks;
}

// Packing space for one thread: an A block (kMcBlock rows) and a B block.
template <int kMr>
float* ThreadPackSpace() {
  static_assert(kMcBlock % kMr == 0, "A blocks are whole panels");
  static thread_local PackSpace space;
  return space.Get(static_cast<size_t>(kMcBlock + kNBlockMax) * kGemmKBlock);
}

// One task: S for rows [r0, r0 + rows) and columns [j0, j0 + nc) of C, by one
// thread alone. For each k-block in order, B's block (kc x nc) is packed once
// and stays in L2; A is packed kMcBlock rows at a time (in L2 too).
template <typename Kernel>
void RunTask(const Operands& g, int r0, int rows, int j0, int nc) {
  float* packed_a = ThreadPackSpace<Kernel::kMr>();
  float* packed_b = packed_a + static_cast<size_t>(kMcBlock) * kGemmKBlock;
  const int block_k = KBlock(g.k);
  for (int p0 = 0; p0 < g.k; p0 += block_k) {
    const int kc = std::min(block_k, g.k - p0);
    PackB<Kernel>(g, j0, nc, p0, kc, packed_b);
    for (int i0 = r0; i0 < r0 + rows; i0 += kMcBlock) {
      const int mc = std::min(kMcBlock, r0 + rows - i0);
      PackA<Kernel>(g, i0, mc, p0, kc, packed_a);
      MultiplyBlocks<Kernel>(g, packed_a, i0, mc, packed_b, j0, nc, kc, p0 == 0, p0 + kc == g.k);
    }
  }
}

// S by a team of `threads` threads (OpenMP) taking tasks as they come free,
// in order: each task is one chunk of A's rows (kChunkPanels panels) in one
// k-block, every chunk of k-block 0 first, then of block 1, and so on. A
// thread packs the B block of the k-block it works in for itself (into its
// own L2) and the chunk of A it took, and multiplies the chunk by the whole B
// block. A chunk's k-block p + 1 waits only for the same chunk's block p
// (`done`: its running value in C), so there is no barrier: a thread that the
// system stops for a while (a digest hasher, another tenant) holds up one
// chunk, and the others run on through the rest of the k-block and the next.
template <typename Kernel>
void RunChunkTasks(const Operands& g, int threads) {
  constexpr int kMr = Kernel::kMr;
  const int block_k = KBlock(g.k);
  const int k_blocks = (g.k + block_k - 1) / block_k;
  const int chunk_rows = kChunkPanels * kMr;
  const int chunks = (g.m + chunk_rows - 1) / chunk_rows;
  const long tasks = static_cast<long>(k_blocks) * chunks;
  std::atomic<long> next_task{0};
  std::vector<std::atomic<int>> done(static_cast<size_t>(chunks));  // each chunk's k-blocks done
  for (std::atomic<int>& blocks : done) blocks.store(0, std::memory_order_relaxed);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    KnownMxcsr mxcsr;  // in every worker thread
    float* packed_a = ThreadPackSpace<kMr>();
    float* packed_b = packed_a + static_cast<size_t>(kMcBlock) * kGemmKBlock;
    int packed_block = -1;
    for (long task = next_task++; task < tasks; task = next_task++) {
      const int block = static_cast<int>(task / chunks), chunk = static_cast<int>(task % chunks);
      const int p0 = block * block_k, kc = std::min(block_k, g.k - p0);
      if (block != packed_block) {
        PackB<Kernel>(g, 0, g.n, p0, kc, packed_b);
        packed_block = block;
      }
      const int i0 = chunk * chunk_rows, mc = std::min(chunk_rows, g.m - i0);
      PackA<Kernel>(g, i0, mc, p0, kc, packed_a);
      std::atomic<int>& chunk_done = done[static_cast<size_t>(chunk)];
      // Spin a little, then give the CPU up: the thread waited for may be the
      // one the system stopped to run another on this core.
      for (int spins = 0; chunk_done.load(std::memory_order_acquire) < block; ++spins) {
        if (spins < kSpinsBeforeYield) {
          _mm_pause();
        } else {
          std::this_thread::yield();
        }
      }
      MultiplyBlocks<Kernel>(g, packed_a, i0, mc, packed_b, 0, g.n, kc, p0 == 0, p0 + kc == g.k);
      chunk_done.store(block + 1, std::memory_order_release);
    }
  }
}

template <typename Kernel>
void Chains(const Operands& g, int threads);

// S for a C of few columns (CLASSES = 10 against the AVX-512 kernel's 32
// lanes) as the transposed problem, S^T = op(B)^T op(A)^T, whose many
// columns fill the lanes; then S^T's elements are copied to their places in C.
// Every element is still one chain over k in increasing order: element
// (j, i) of S^T chains fma(op(B)[k][j], op(A)[i][k], s), and fma's product
// does not depend on its operands' order. The epilogue follows the copy.
template <typename Kernel>
void TransposedChains(const Operands& g, int threads) {
  static thread_local std::vector<float> transposed;
  transposed.resize(static_cast<size_t>(g.n) * g.m);
  const Operands t{!g.transpose_b, !g.transpose_a, g.n, g.m, g.k, g.b, g.ldb, g.a, g.lda,
                   transposed.data(), static_cast<size_t>(g.m), nullptr};
  Chains<Kernel>(t, threads);
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.n; ++j) g.c[static_cast<size_t>(i) * g.ldc + j] = transposed[static_cast<size_t>(j) * g.m + i];
  if (g.epilogue) ApplyGemmEpilogue(*g.epilogue, g.m, g.n, g.c, g.ldc);
}

// S into g.c for every element: transposed when C has few columns; with
// several threads and C at most kNBlockMax wide with rows to share, chunks of
// rows taken as they come free (RunChunkTasks); else tasks, each a block of
// columns (whole tiles, at most kNBlockMax wide) over a group of rows, run by
// one thread.
template <typename Kernel>
void Chains(const Operands& g, int threads) {
  constexpr int kMr = Kernel::kMr, kNr = Kernel::kNr;
  threads = std::max(1, threads);
  if (2 * g.n <= kNr && g.m >= kNr) {  // more than half the lanes empty: transposed, they fill
    TransposedChains<Kernel>(g, threads);
    return;
  }
  const int column_tiles = (g.n + kNr - 1) / kNr;
  const int team_columns = (column_tiles + threads - 1) / threads * kNr;
  const int row_chunks = (g.m + kChunkPanels * kMr - 1) / (kChunkPanels * kMr);
  if (threads > 1 && g.n <= kNBlockMax && row_chunks >= 2 * threads) {
    RunChunkTasks<Kernel>(g, threads);
    return;
  }
  const int block = std::min(kNBlockMax, team_columns);
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
                  float* c, size_t ldc, const GemmEpilogue& epilogue) {
  if (!GemmIsaSupported(isa) || m < 0 || n < 0 || k < 0) std::abort();
  if (m == 0 || n == 0) return;
  const bool plain = alpha == 1.0f && beta == 0.0f;
  const GemmEpilogue* fused = epilogue.kind == GemmEpilogue::Kind::kNone ? nullptr : &epilogue;
  // The chains' values S go straight into C when C = S, each tile followed by
  // the epilogue; else into a scratch matrix, and alpha and beta, then the
  // epilogue, are applied once, after the chains.
  std::vector<float> scratch;
  Operands g{transpose_a, transpose_b, m, n, k, a, lda, b, ldb, c, ldc, fused};
  if (!plain) {
    scratch.assign(static_cast<size_t>(m) * n, 0.0f);
    g.c = scratch.data();
    g.ldc = static_cast<size_t>(n);
    g.epilogue = nullptr;
  }
  KnownMxcsr mxcsr;  // alpha, beta and the epilogue below run in this thread
  if (k > 0) ChainsFor(isa, g, threads);
  if (plain && k > 0) return;  // each tile's epilogue ran after its chains
  if (plain) {
    for (int i = 0; i < m; ++i) std::fill_n(c + static_cast<size_t>(i) * ldc, n, 0.0f);
  } else {
    for (int i = 0; i < m; ++i) {
      float* row = c + static_cast<size_t>(i) * ldc;
      const float* sums = scratch.data() + static_cast<size_t>(i) * n;
      for (int j = 0; j < n; ++j) {
        const float scaled = alpha * sums[j];
        row[j] = beta == 0.0f ? scaled : scaled + beta * row[j];
      }
    }
  }
  if (fused) ApplyGemmEpilogue(*fused, m, n, c, ldc);
}

}  // namespace dmlp
