// The ordered SGEMM (ordered_sgemm.h) as a tiled SIMT kernel. A block computes
// a kOrderedSgemmTileM x kOrderedSgemmTileN tile of C with 256 threads, each
// thread a 4 x 4 micro-tile in registers; op(A) and op(B) pass through shared
// memory kOrderedSgemmTileK values of k at a time. Why no layout choice here
// can change a bit:
//   - each accumulator is one element's chain: it starts at +0 and takes
//     __fmaf_rn(A[i][k], B[k][j], acc) for k = 0, 1, ..., K-1, one k tile after
//     the other, each continuing from the running value. No split-k, no second
//     accumulator, no partial sums added, no tensor cores;
//   - the last k tile runs only its `depth` real values of k: the staged tiles
//     are padded along i and j (lanes computed and thrown away), never along k,
//     since fma(0, Inf, s) is NaN and fma(0, x, -0) is +0;
//   - alpha, beta and the epilogue are __fmul_rn/__fadd_rn, which nvcc never
//     contracts into an FMA (and the file is built with --fmad=false besides);
//   - nothing flushes denormals: built without -ftz (nor fast math), and fma.rn.f32
//     keeps denormal inputs and results.
#include "trainer/cuda/ordered_sgemm.h"

#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/math/device_macros.h"

namespace dmlp::cuda {
namespace {

constexpr int kMicroM = 4;  // rows of C per thread
constexpr int kMicroN = 4;  // columns of C per thread
constexpr int kThreadsN = kOrderedSgemmTileN / kMicroN;
constexpr int kThreads = (kOrderedSgemmTileM / kMicroM) * kThreadsN;
// Shared rows padded by 4 floats: the transposed stores spread over the banks,
// and every row still starts on 16 bytes for the float4 reads.
constexpr int kSharedPad = 4;
static_assert(kMicroM == 4 && kMicroN == 4, "the fragments are read as one float4 each");
static_assert(kOrderedSgemmTileM * kOrderedSgemmTileK % kThreads == 0 &&
                  kOrderedSgemmTileN * kOrderedSgemmTileK % kThreads == 0,
              "every thread stages the same number of values");

struct Operands {
  bool transpose_a, transpose_b;
  int m, n, k;
  float alpha, beta;
  const float* __restrict__ a;
  size_t lda;
  const float* __restrict__ b;
  size_t ldb;
  float* __restrict__ c;
  size_t ldc;
  GemmEpilogue epilogue;
};

// op(A)[row0 .. +TileM)[k0 .. +depth) into tile[kk][i]; rows past m read as 0.
// Consecutive threads walk the operand's stored rows, so the loads coalesce.
__device__ void StageA(const Operands& g, int row0, int k0, int depth,
                       float (&tile)[kOrderedSgemmTileK][kOrderedSgemmTileM + kSharedPad]) {
  for (int e = threadIdx.x; e < kOrderedSgemmTileM * kOrderedSgemmTileK; e += kThreads) {
    const int i = g.transpose_a ? e % kOrderedSgemmTileM : e / kOrderedSgemmTileK;
    const int kk = g.transpose_a ? e / kOrderedSgemmTileM : e % kOrderedSgemmTileK;
    const int row = row0 + i;
    float value = 0.0f;
    if (row < g.m && kk < depth)
      value = g.transpose_a ? g.a[static_cast<size_t>(k0 + kk) * g.lda + row]
                            : g.a[static_cast<size_t>(row) * g.lda + k0 + kk];
    tile[kk][i] = value;
  }
}

// op(B)[k0 .. +depth)[col0 .. +TileN) into tile[kk][j]; columns past n read as 0.
__device__ void StageB(const Operands& g, int col0, int k0, int depth,
                       float (&tile)[kOrderedSgemmTileK][kOrderedSgemmTileN + kSharedPad]) {
  for (int e = threadIdx.x; e < kOrderedSgemmTileN * kOrderedSgemmTileK; e += kThreads) {
    const int j = g.transpose_b ? e / kOrderedSgemmTileK : e % kOrderedSgemmTileN;
    const int kk = g.transpose_b ? e % kOrderedSgemmTileK : e / kOrderedSgemmTileN;
    const int col = col0 + j;
    float value = 0.0f;
    if (col < g.n && kk < depth)
      value = g.transpose_b ? g.b[static_cast<size_t>(col) * g.ldb + k0 + kk]
                            : g.b[static_cast<size_t>(k0 + kk) * g.ldb + col];
    tile[kk][j] = value;
  }
}

// One k tile of every chain of the micro-tile, continuing from acc.
// kFullDepth: the tile holds kOrderedSgemmTileK values (the loop unrolls);
// otherwise only the first `depth`, the rest of the tile never entering a chain.
template <bool kFullDepth>
__device__ __forceinline__ void ChainStep(const float (&a_tile)[kOrderedSgemmTileK][kOrderedSgemmTileM + kSharedPad],
                                          const float (&b_tile)[kOrderedSgemmTileK][kOrderedSgemmTileN + kSharedPad],
                                          int depth, int ti, int tj, float (&acc)[kMicroM][kMicroN]) {
  const int steps = kFullDepth ? kOrderedSgemmTileK : depth;
#pragma unroll
  for (int kk = 0; kk < steps; ++kk) {  // CHAIN ORDER: k ascending, one accumulator per element
    const float4 a4 = *reinterpret_cast<const float4*>(&a_tile[kk][ti * kMicroM]);
    const float4 b4 = *reinterpret_cast<const float4*>(&b_tile[kk][tj * kMicroN]);
    const float a_frag[kMicroM] = {a4.x, a4.y, a4.z, a4.w};
    const float b_frag[kMicroN] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
    for (int i = 0; i < kMicroM; ++i)
#pragma unroll
      for (int j = 0; j < kMicroN; ++j) acc[i][j] = __fmaf_rn(a_frag[i], b_frag[j], acc[i][j]);
  }
}

// The CPU's steps after the chain (ordered_sgemm.cc, gemm_epilogue.cc): C = S
// when alpha = 1 and beta = 0, else alpha * S (+ beta * C, read only then),
// then the epilogue's add, compare or select.
__device__ float Finish(const Operands& g, int row, int col, float sum) {
  float* out = g.c + static_cast<size_t>(row) * g.ldc + col;
  float value = sum;
  if (!(g.alpha == 1.0f && g.beta == 0.0f)) {
    const float scaled = FMul(g.alpha, sum);
    value = g.beta == 0.0f ? scaled : FAdd(scaled, FMul(g.beta, *out));
  }
  switch (g.epilogue.kind) {
    case GemmEpilogue::Kind::kNone: break;
    case GemmEpilogue::Kind::kAddBias: value = FAdd(value, g.epilogue.bias[col]); break;
    case GemmEpilogue::Kind::kAddBiasRelu:
      value = FAdd(value, g.epilogue.bias[col]);
      value = value <= 0.0f ? 0.0f : value;  // NaN passes, -0 becomes +0
      break;
    case GemmEpilogue::Kind::kMaskByPositive:
      value = g.epilogue.mask[static_cast<size_t>(row) * g.epilogue.mask_stride + col] > 0.0f ? value : 0.0f;
      break;
  }
  return value;
}

__global__ void __launch_bounds__(kThreads) ordered_sgemm_forward_kernel(Operands g) {
  __shared__ __align__(16) float a_tile[kOrderedSgemmTileK][kOrderedSgemmTileM + kSharedPad];
  __shared__ __align__(16) float b_tile[kOrderedSgemmTileK][kOrderedSgemmTileN + kSharedPad];
  const int row0 = blockIdx.y * kOrderedSgemmTileM;
  const int col0 = blockIdx.x * kOrderedSgemmTileN;
  const int ti = threadIdx.x / kThreadsN;
  const int tj = threadIdx.x % kThreadsN;
  float acc[kMicroM][kMicroN];
#pragma unroll
  for (int i = 0; i < kMicroM; ++i)
#pragma unroll
    for (int j = 0; j < kMicroN; ++j) acc[i][j] = 0.0f;  // +0: the chain's start
  for (int k0 = 0; k0 < g.k; k0 += kOrderedSgemmTileK) {
    const int depth = min(kOrderedSgemmTileK, g.k - k0);
    StageA(g, row0, k0, depth, a_tile);
    StageB(g, col0, k0, depth, b_tile);
    __syncthreads();
    if (depth == kOrderedSgemmTileK) {
      ChainStep<true>(a_tile, b_tile, depth, ti, tj, acc);
    } else {
      ChainStep<false>(a_tile, b_tile, depth, ti, tj, acc);
    }
    __syncthreads();  // the tiles are read by all before the next k tile overwrites them
  }
#pragma unroll
  for (int i = 0; i < kMicroM; ++i) {
    const int row = row0 + ti * kMicroM + i;
#pragma unroll
    for (int j = 0; j < kMicroN; ++j) {
      const int col = col0 + tj * kMicroN + j;
      if (row < g.m && col < g.n) g.c[static_cast<size_t>(row) * g.ldc + col] = Finish(g, row, col, acc[i][j]);
    }
  }
}

unsigned Tiles(int extent, int tile) { return static_cast<unsigned>((extent + tile - 1) / tile); }

}  // namespace

Status OrderedSgemmCuda(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
                        size_t lda, const float* b, size_t ldb, float beta, float* c, size_t ldc,
                        const GemmEpilogue& epilogue, cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0) return Status::Error(kInternal, "OrderedSgemmCuda: negative size");
  const bool has_a = m > 0 && k > 0, has_b = k > 0 && n > 0;
  if ((has_a && lda < static_cast<size_t>(transpose_a ? m : k)) ||
      (has_b && ldb < static_cast<size_t>(transpose_b ? k : n)) || (m > 0 && ldc < static_cast<size_t>(n)))
    return Status::Error(kInternal, "OrderedSgemmCuda: a row stride shorter than its row");
  const bool needs_bias = epilogue.kind == GemmEpilogue::Kind::kAddBias ||
                          epilogue.kind == GemmEpilogue::Kind::kAddBiasRelu;
  const bool needs_mask = epilogue.kind == GemmEpilogue::Kind::kMaskByPositive;
  if ((needs_bias && epilogue.bias == nullptr) ||
      (needs_mask && (epilogue.mask == nullptr || epilogue.mask_stride < static_cast<size_t>(n))))
    return Status::Error(kInternal, "OrderedSgemmCuda: an epilogue without its bias or mask");
  if (m == 0 || n == 0) return Status::Ok();
  const dim3 grid(Tiles(n, kOrderedSgemmTileN), Tiles(m, kOrderedSgemmTileM));
  if (grid.y > 65535) return Status::Error(kInternal, "OrderedSgemmCuda: C has too many rows for one grid");
  const Operands g{transpose_a, transpose_b, m, n, k, alpha, beta, a, lda, b, ldb, c, ldc, epilogue};
  ordered_sgemm_forward_kernel<<<grid, kThreads, 0, stream>>>(g);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
