// defines: Backend, SnapshotBuffer, SnapshotWaiter, CreateCpuBackend, CreateCudaBackend,
//          CudaDeviceMemory
//
// The platform seam. Everything a rank does that is not GEMMs, kernels or
// collectives (plan, rendezvous, data definition, initialization, digests,
// receipts, result and state files) lives in the shared trainer; a Backend
// owns the device state and performs optimizer updates on it.
//
// Contract of one update (both platforms; docs/architecture.md, "The invariants"):
//   1. for each local shard g in [plan.first_shard(), + shards_per_rank), in
//      order: generate samples [g*shard_size, (g+1)*shard_size) of (step,
//      microbatch) (trainer/math/data.h), forward/backward with fixed shapes, giving
//      a partial gradient of sum(loss_i)/BATCH and a partial loss sum;
//   2. REDUCTION=ordered: the element-wise global sum ((g0 + g1) + g2) + ... in
//      global shard order, each slice folded by its owner rank and all-gathered;
//      REDUCTION=allreduce: local shards summed in order, then one library
//      all-reduce. Both are one schedule for every platform
//      (trainer/reduction/ordered_reduction.h), over the platform's fold and
//      transport;
//   3. Adam (trainer/math/adam.h) on the full state, identically on every rank.
// The loss of an update is (folded loss sum) / BATCH, as float32.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/state_layout.h"
#include "common/status.h"
#include "trainer/checks/audited_partials.h"
#include "trainer/device_layout.h"
#include "trainer/test_fault_target.h"
#include "trainer/plan.h"

namespace dmlp {

class Rendezvous;

/// Which device a rank computes on, as people name it: recorded per (re)start
/// in rank-<r>.env.jsonl and named when a rank's state diverges, so that a
/// faulty GPU or host can be found, not only a rank number.
struct DeviceIdentity {
  std::string kind;        // "cuda" or "cpu"
  std::string name;        // "NVIDIA L4", or the CPU model
  std::string uuid;        // "GPU-8f3c…" (CUDA); "" on the CPU
  std::string pci_bus_id;  // "0000:3B:00.0" (CUDA); "" on the CPU
  std::string driver;      // the CUDA version the driver supports, "12.8"; "" on the CPU
  // Which GPU of the host and how large: they decide no bits, so they are
  // here and not in the fingerprint (two hosts' GPUs of one model compare).
  int ordinal = -1;           // visible device index (CUDA); -1 on the CPU
  uint64_t memory_bytes = 0;  // the GPU's memory (CUDA); 0 on the CPU
};

/// Host memory for one state image (page-locked on CUDA so copies can be async).
using SnapshotBuffer = std::unique_ptr<uint8_t[], void (*)(uint8_t*)>;
/// Blocks until a snapshot's bytes are in its buffer; its error fails the rank.
using SnapshotWaiter = std::function<Status()>;

class Backend {
 public:
  virtual ~Backend() = default;

  /// Platform facts for result.json's fingerprint (device, libraries, threads).
  virtual nlohmann::json Fingerprint() const = 0;
  /// The device this rank computes on (see DeviceIdentity).
  virtual DeviceIdentity Device() const = 0;
  /// A host buffer of layout.image_bytes() suitable for BeginSnapshot.
  virtual Result<SnapshotBuffer> AllocateSnapshotBuffer() = 0;
  /// Replaces the whole state with a canonical image (initial or resumed state).
  virtual Status LoadState(const uint8_t* image) = 0;
  /// One optimizer update (see the contract above). May return before the device finished.
  Status Update(int64_t step, int64_t microbatch) {
    DMLP_RETURN_IF_ERROR(ComputePartials(step, microbatch));
    return ReduceAndApply();
  }
  /// Step 1 of an update: this rank's shard partials. The trainer audits them
  /// (trainer/checks/shard_audit.h) before ReduceAndApply.
  virtual Status ComputePartials(int64_t step, int64_t microbatch) = 0;
  /// Steps 2 and 3 of the update whose partials ComputePartials computed.
  virtual Status ReduceAndApply() = 0;
  /// The global mean loss of the most recent update (waits for it).
  virtual Result<float> LastLoss() = 0;
  /// Starts copying the state as of all updates issued so far into `buffer`; the
  /// returned waiter blocks until the copy is complete. Updates may be issued
  /// meanwhile. REQUIRES: `buffer` stays untouched until the waiter returned.
  virtual Result<SnapshotWaiter> BeginSnapshot(uint8_t* buffer) = 0;
  /// The shard audit's access to this rank's partials (trainer/checks/audited_partials.h);
  /// null where a platform offers none.
  virtual AuditedPartials* audited_partials() { return nullptr; }
  /// Tests only: where DMLP_TEST_FLIP_BIT and DMLP_TEST_CORRUPT_SHARD land
  /// (trainer/test_fault_target.h); null where a platform takes none.
  virtual TestFaultTarget* test_faults() { return nullptr; }
  /// Seconds spent so far per phase ("data", "compute", "collectives", "optimizer"),
  /// for the benchmark's split of a step; empty where a platform does not measure.
  virtual nlohmann::json Profile() const { return nlohmann::json::object(); }
};

/// CPU platform: CPU GEMM (gemm_cpu.h) and Gloo collectives over the rendezvous.
Result<std::unique_ptr<Backend>> CreateCpuBackend(const Plan& plan, const StateLayout& layout,
                                                  Rendezvous& rendezvous);
/// CUDA platform: cuBLAS, own kernels, NCCL. PLATFORM_UNAVAILABLE when built without CUDA.
Result<std::unique_ptr<Backend>> CreateCudaBackend(const Plan& plan, const StateLayout& layout,
                                                   Rendezvous& rendezvous);
/// This rank's GPU (SelectDevice: the backend's own choice) and its free
/// memory, for the plan's memory check before anything is allocated.
/// PLATFORM_UNAVAILABLE when built without CUDA.
Result<DeviceMemory> CudaDeviceMemory(const Plan& plan);

}  // namespace dmlp
