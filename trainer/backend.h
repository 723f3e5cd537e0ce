// defines: Backend, SnapshotBuffer, SnapshotWaiter, PartialCopy, CreateCpuBackend, CreateCudaBackend,
//          CudaDeviceMemory
//
// The platform seam. Everything a rank does that is not GEMMs, kernels or
// collectives (plan, rendezvous, data definition, initialization, digests,
// receipts, result and state files) lives in the shared trainer; a Backend
// owns the device state and performs optimizer updates on it.
//
// Contract of one update (both platforms; DESIGN.md "The computation"):
//   1. for each local shard g in [plan.first_shard(), + shards_per_rank), in
//      order: generate samples [g*shard_size, (g+1)*shard_size) of (step,
//      microbatch) (trainer/math/data.h), forward/backward with fixed shapes, giving
//      a partial gradient of sum(loss_i)/BATCH and a partial loss sum;
//   2. REDUCTION=ordered: the element-wise global sum ((g0 + g1) + g2) + ... in
//      global shard order, each slice folded by its owner rank and all-gathered
//      (ordered_reduce.h); REDUCTION=allreduce: local shards summed in order,
//      then one library all-reduce;
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
#include "trainer/device_layout.h"
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

/// A shard partial on its way to host memory (Backend::CopyPartial): `bytes`
/// holds its `size` bytes once `ready` returned OK. `ready` may run on another
/// thread; the backend outlives it.
struct PartialCopy {
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  SnapshotWaiter ready;
};

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
  // The shard audit (trainer/checks/shard_audit.h): a padded partial (P gradient
  // values, the loss sum, the zeros) copied to host memory, for a thread that
  // hashes it while the updates go on. Both calls copy into the one audit
  // buffer. REQUIRES: between ComputePartials and ReduceAndApply; the plan
  // audits (AUDIT_EVERY > 0, NUM_PROCESSES > 1); the previous PartialCopy was
  // waited for and its bytes read.
  /// Local shard `local_shard`'s partial of the update in progress.
  virtual Result<PartialCopy> CopyPartial(int64_t local_shard) {
    (void)local_shard;
    return Status::Error("INTERNAL", "this backend has no shard audit");
  }
  /// Computes global shard `shard`'s partial of (step, microbatch) from the
  /// current parameters (the state before this update's Adam step), with the
  /// same code and shapes as its owner, and copies it.
  virtual Result<PartialCopy> CopyAuditShard(int64_t step, int64_t microbatch, int64_t shard) {
    (void)step, (void)microbatch, (void)shard;
    return Status::Error("INTERNAL", "this backend has no shard audit");
  }
  /// Tests only (DMLP_TEST_CORRUPT_SHARD): flips one bit of local shard
  /// `local_shard`'s partial before the reduction, as a faulty device would:
  /// the top mantissa bit of the first gradient value (a lowest bit can vanish
  /// in the fold's rounding, and the tests need the fault to reach the state).
  virtual Status FlipPartialBitForTests(int64_t local_shard) {
    (void)local_shard;
    return Status::Error("INTERNAL", "this backend has no shard audit");
  }
  /// Seconds spent so far per phase ("data", "compute", "collectives", "optimizer"),
  /// for the benchmark's split of a step; empty where a platform does not measure.
  virtual nlohmann::json Profile() const { return nlohmann::json::object(); }
  /// Tests only (DMLP_TEST_FLIP_BIT, trainer/test_faults.h): flips bit `bit`
  /// (0..7) of byte `byte` of this rank's state image where it lives, after
  /// every update issued so far, as silent corruption would. REQUIRES:
  /// byte < layout.image_bytes(). Byte 0.. is the first parameter.
  virtual Status FlipBitForTests(size_t /*byte*/, int /*bit*/) {
    return Status::Error("UNSUPPORTED", "this backend cannot flip a bit of its state");
  }
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
