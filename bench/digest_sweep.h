// defines: kSweepThreads, kHostRanks, HostDigestRate, MeasureHostDigest, SweepLine
//
// The digest's throughput against its hasher count K (DIGEST_THREADS) on the
// host's cores (the GPU kit's "digest threads" row): one pipeline alone, and
// kHostRanks pipelines at once (8 ranks per host on the target). A pipeline
// here hashes a fixed image that a snapshot memcpys (as on the CPU platform;
// on CUDA the copy is a DMA that costs the host nothing), so it is a rank
// whose device computes infinitely fast: the figure is the digest's ceiling.
// digest_bench prints it on any machine; gpu_bench --digest-sweep adds the
// step time with and without the digest on the GPU. Both print SweepLine,
// which tests/gpu/digest_row.sh reads.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace dmlp::bench {

/// The hasher counts measured: K = 1, 2, 4, 8.
inline const std::vector<int> kSweepThreads = {1, 2, 4, 8};
/// Ranks of one host on the target (gpu_8x_l4).
inline constexpr int kHostRanks = 8;

/// What one pipeline hashes, in state bytes per second of wall time.
struct HostDigestRate {
  double gb_per_s = 0;     // one pipeline's rate (the slowest one's, with several)
  double ms_per_step = 0;  // its wall time per image
};

/// `pipelines` pipelines of `threads` hashers at once, `steps` images of
/// `image_bytes` each; the slowest pipeline's rate.
Result<HostDigestRate> MeasureHostDigest(size_t image_bytes, int threads, int pipelines, int steps);

/// "digest_sweep threads=K image_mb=M pipelines=P gb_per_s=G ms_per_step=S"
/// plus `extra` (" key=value..."), one line per measurement.
std::string SweepLine(int threads, size_t image_bytes, int pipelines, const HostDigestRate& rate,
                      const std::string& extra = "");

}  // namespace dmlp::bench
