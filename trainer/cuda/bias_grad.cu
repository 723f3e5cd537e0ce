#include "trainer/cuda/bias_grad.h"
#include "common/format/error_codes.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/launch_util.h"
#include "trainer/math/device_macros.h"

namespace dmlp::cuda {
namespace {

constexpr int kColumnsPerBlock = 32;  // one warp reads 32 neighbouring columns of a row
constexpr int kRowLanes = 8;          // threads sharing one column inside a chunk
static_assert(kBiasGradRowsPerChunk % kRowLanes == 0, "chunks split evenly into lanes");

DMLP_HOST_DEVICE DMLP_INLINE int64_t ChunkCount(int64_t rows) {
  return (rows + kBiasGradRowsPerChunk - 1) / kBiasGradRowsPerChunk;
}

// Level 1, bit-exact run to run: chunk c covers rows [256c, 256c + 256). In it,
// lane y of column j sums rows 256c + y, + 8, + 16, ... in that order; the 8
// lane sums are combined by a fixed tree (y += y+4, y += y+2, y += y+1). The
// order is a function of (rows, column) only — block scheduling only decides
// *when* a chunk is computed, never how — and there are no atomics.
__global__ void bias_grad_chunk_kernel(const float* delta, int64_t rows, int64_t cols,
                                       float* chunk_sums) {
  __shared__ float lanes[kRowLanes][kColumnsPerBlock + 1];
  const int64_t chunks = ChunkCount(rows);
  const int64_t tiles = (cols + kColumnsPerBlock - 1) / kColumnsPerBlock;
  // Loop bounds are uniform across the block, so every thread meets every barrier.
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t col = tile * kColumnsPerBlock + threadIdx.x;
    for (int64_t chunk = blockIdx.y; chunk < chunks; chunk += gridDim.y) {
      const int64_t first = chunk * kBiasGradRowsPerChunk;
      const int64_t end =
          first + kBiasGradRowsPerChunk < rows ? first + kBiasGradRowsPerChunk : rows;
      float sum = 0.0f;
      if (col < cols) {
        for (int64_t row = first + threadIdx.y; row < end; row += kRowLanes)
          sum = FAdd(sum, delta[row * cols + col]);
      }
      lanes[threadIdx.y][threadIdx.x] = sum;
      __syncthreads();
      for (int half = kRowLanes / 2; half > 0; half /= 2) {
        if (static_cast<int>(threadIdx.y) < half)
          lanes[threadIdx.y][threadIdx.x] =
              FAdd(lanes[threadIdx.y][threadIdx.x], lanes[threadIdx.y + half][threadIdx.x]);
        __syncthreads();
      }
      if (threadIdx.y == 0 && col < cols) chunk_sums[chunk * cols + col] = lanes[0][threadIdx.x];
      __syncthreads();  // lanes is reused by the block's next (tile, chunk)
    }
  }
}

// Level 2, bit-exact: one thread per column folds the chunk sums left to right.
__global__ void bias_grad_fold_kernel(const float* chunk_sums, int64_t chunks, int64_t cols,
                                      float* out) {
  for (int64_t col = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; col < cols;
       col += int64_t{gridDim.x} * blockDim.x) {
    float sum = chunk_sums[col];
    for (int64_t chunk = 1; chunk < chunks; ++chunk)
      sum = FAdd(sum, chunk_sums[chunk * cols + col]);
    out[col] = sum;
  }
}

}  // namespace

size_t BiasGradientScratchFloats(int64_t rows, int64_t cols) {
  return static_cast<size_t>(ChunkCount(rows) * cols);
}

Status BiasGradient(const float* delta, int64_t rows, int64_t cols, float* scratch, float* out,
                    cudaStream_t stream) {
  if (rows < 1 || cols < 1) return Status::Error(kInternal, "BiasGradient: empty shape");
  const int64_t chunks = ChunkCount(rows);
  const dim3 grid(GridBlocks(static_cast<uint64_t>(cols), kColumnsPerBlock),
                  GridBlocks(static_cast<uint64_t>(chunks), 1));
  const dim3 block(kColumnsPerBlock, kRowLanes);
  bias_grad_chunk_kernel<<<grid, block, 0, stream>>>(delta, rows, cols, scratch);
  CUDA_CHECK(cudaGetLastError());
  bias_grad_fold_kernel<<<GridBlocks(static_cast<uint64_t>(cols)), kThreadsPerBlock, 0, stream>>>(
      scratch, chunks, cols, out);
  CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

}  // namespace dmlp::cuda
