// defines: MemoryNeed, kDefaultSnapshotBuffers, EstimateMemory, HostMemory, HostMemoryAvailable,
//          CheckMemoryFits, CheckDeviceMemoryFits, CheckPlanMemory
//
// What a plan costs in memory, computed from its numbers alone before
// anything is allocated, so an oversized plan is one clean PLAN_TOO_LARGE
// instead of a std::bad_alloc (SIGABRT) or minutes of building a huge layout.
// Every product saturates at UINT64_MAX: a plan whose need overflows 64 bits
// is refused, never mistaken for a small one.
//
// The estimate is the peak of what dmlp itself allocates per rank, mirroring
// the backends' buffers (trainer/cpu/backend_cpu.cc, mlp_cpu.cc;
// trainer/cuda/backend_cuda.cc, mlp_cuda.cc); libraries' own memory (BLIS,
// Gloo, NCCL, the CUDA context) and thread stacks are not in it.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "trainer/device_layout.h"
#include "trainer/plan.h"

namespace dmlp {

/// Bytes one rank needs at its peak, on the host and on its GPU (0 on the CPU platform).
struct MemoryNeed {
  uint64_t host_bytes = 0;
  uint64_t device_bytes = 0;
};

/// The digest pipeline's host copies of the state image with one hasher
/// (DIGEST_THREADS=1: K + 1 = 2; trainer/output/digest_pipeline.h).
inline constexpr int64_t kDefaultSnapshotBuffers = 2;

/// The peak bytes of `plan` on its platform with `snapshot_buffers` host images.
/// REQUIRES: a plan ReadPlan accepted (dimensions >= 1, shards dividing the batch).
MemoryNeed EstimateMemory(const Plan& plan, int64_t snapshot_buffers);

/// What this process may still allocate on the host, and why no more.
struct HostMemory {
  uint64_t available = 0;
  /// Empty for MemAvailable and RLIMIT_AS; the cgroup and its limit when that
  /// is the tightest, since MemAvailable then says far more than will be given.
  std::string bound;
};

/// min(MemAvailable of /proc/meminfo, RLIMIT_AS minus this process's address
/// space, what the memory cgroups leave: cgroup_memory.h); UINT64_MAX when none says anything.
HostMemory HostMemoryAvailable();

/// PLAN_TOO_LARGE "needs N bytes[ of GPU memory], M available[ (bound)]" when need > available.
Status CheckMemoryFits(uint64_t need, uint64_t available, bool device, const std::string& bound = "");

/// PLAN_TOO_LARGE when the ranks sharing `device`'s GPU (COLLECTIVES=gloo),
/// `rank_need` bytes each, need more than its free memory together.
Status CheckDeviceMemoryFits(uint64_t rank_need, const DeviceMemory& device);

/// The plan against this host (and, with PLATFORM=cuda, this rank's GPU).
Status CheckPlanMemory(const Plan& plan, int64_t snapshot_buffers);

}  // namespace dmlp
