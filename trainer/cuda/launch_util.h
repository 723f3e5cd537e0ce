// defines: kThreadsPerBlock, GridBlocks, kMaxGridDimension
//
// Launch geometry shared by the element-wise kernels. Every such kernel is a
// grid-stride loop in which each element is computed by exactly one thread
// with a fixed sequence of operations, so its result does not depend on the
// geometry chosen here (nor on scheduling): geometry is a speed knob only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dmlp::cuda {

inline constexpr int kThreadsPerBlock = 256;
/// Cap for any grid dimension (gridDim.y/z allow 65535; x is capped the same
/// for simplicity, grid-stride loops cover the rest).
inline constexpr unsigned kMaxGridDimension = 65535;

/// Blocks for `count` items at `per_block` items per block, at least 1, capped.
inline unsigned GridBlocks(uint64_t count, uint64_t per_block = kThreadsPerBlock) {
  const uint64_t blocks = (count + per_block - 1) / per_block;
  if (blocks == 0) return 1;
  return blocks > kMaxGridDimension ? kMaxGridDimension : static_cast<unsigned>(blocks);
}

}  // namespace dmlp::cuda
