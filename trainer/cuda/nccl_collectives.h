// defines: NcclComm
//
// The CUDA platform's collectives: one NCCL communicator over all ranks, made
// from an ncclUniqueId that rank 0 creates and publishes through the
// rendezvous. With REDUCTION=ordered NCCL only moves bytes (all-to-all of
// slices with grouped ncclSend/ncclRecv, then ncclAllGather): every addition
// happens in this platform's own fold kernel, so NCCL's algorithm choice
// cannot change a bit. REDUCTION=allreduce uses one ncclAllReduce(sum).
//
// Unless set by the user, NCCL_SHM_DISABLE=1, NCCL_P2P_DISABLE=1 and
// NCCL_NVLS_ENABLE=0 are set before init: no host shared memory, no CUDA IPC,
// so a job can be frozen and restored (cuda-checkpoint + CRIU).
//
// The communicator is non-blocking (ncclConfig_t.blocking = 0): no NCCL call
// ever blocks the host on a peer. Init is a wait on peers and is bounded by
// HEARTBEAT_TIMEOUT_SECONDS of running time (peer_wait.h). After that, every
// polling loop also asks the rendezvous' PeerLoss (peer_monitor.h): a peer
// silent for the heartbeat while this rank runs ends the wait with PEER_LOST
// and the communicator is aborted (ncclCommAbort), while a whole job frozen
// and continued just waits longer; a failed peer is reported by
// ncclCommGetAsyncError (CheckAsyncError) and ends the wait with NCCL_ERROR.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/status.h"
#include "trainer/cuda/device_collectives.h"

namespace dmlp {
class PeerLoss;
class Rendezvous;
}

namespace dmlp::cuda {

class NcclComm final : public DeviceCollectives {
 public:
  /// Joins the communicator of all `rendezvous.world_size()` ranks on the
  /// current device. RENDEZVOUS_TIMEOUT when not every rank joined within
  /// `heartbeat` of running time; NCCL_ERROR for NCCL's own failures.
  static Result<std::unique_ptr<NcclComm>> Create(Rendezvous& rendezvous,
                                                  std::chrono::milliseconds heartbeat);
  /// Flushes and destroys the communicator when it is healthy (waiting at most
  /// the heartbeat timeout for peers), aborts it otherwise, so that no kernel
  /// stays blocked on a peer and device memory can be freed.
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  /// Ordered reduction's all-to-all: rank q receives slice q of every local
  /// shard partial of every rank. partials: [local shard][stride] (slice q of
  /// shard s at s * stride + q * slice); receive: [rank][local shard][slice],
  /// i.e. global shard order. Self slices are device copies. On `stream`.
  Status AllToAllSlices(const float* partials, size_t local_shards, size_t stride, size_t slice,
                        float* receive, cudaStream_t stream) override;
  /// receive[q * count, (q+1) * count) = rank q's send; in place (NCCL's
  /// in-place all-gather) when send == receive + rank * count. On `stream`.
  Status AllGather(const float* send, float* receive, size_t count, cudaStream_t stream) override;
  /// In-place element-wise sum over ranks (NCCL's algorithm decides the order). On `stream`.
  Status AllReduceSum(float* data, size_t count, cudaStream_t stream) override;

  /// NCCL_ERROR once NCCL reported an asynchronous error (a peer failed, a
  /// connection broke); PEER_LOST once the rendezvous declared a peer lost.
  /// Thread-safe: the snapshot waiter calls it from the hasher thread.
  Status CheckAsyncError() const override;

  /// Makes the destructor abort instead of finalizing (the rank failed elsewhere).
  void MarkFailed() override { failed_.store(true); }
  std::string Description() const override { return "nccl"; }

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  /// The NCCL library version, "2.28.9"; NCCL_VERSION_MISMATCH when it is not
  /// the NCCL of the header dmlp was compiled with (trainer/cuda/nccl_version.h).
  static Result<std::string> LibraryVersion();

 private:
  NcclComm(ncclComm_t comm, int rank, int world_size, std::chrono::milliseconds heartbeat,
           std::shared_ptr<PeerLoss> peer_loss);
  /// PEER_LOST (and marks the communicator failed) once a peer was declared lost.
  Status CheckPeerLoss() const;
  /// After a call that may return ncclInProgress: waits (no deadline) until the
  /// communicator finished enqueueing it, or reports its error.
  Status WaitEnqueued(const char* what) const;

  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int world_size_ = 1;
  std::chrono::milliseconds heartbeat_;
  std::shared_ptr<PeerLoss> peer_loss_;  // the rendezvous'; outlives nothing, shared
  mutable std::atomic<bool> failed_{false};  // an error was seen: abort, never finalize
};

}  // namespace dmlp::cuda
