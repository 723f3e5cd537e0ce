#include "trainer/cuda/nccl_collectives.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/format/error_codes.h"
#include "trainer/cuda/nccl_check.h"
#include "trainer/cuda/nccl_version.h"
#include "trainer/cuda/stream_wait.h"
#include "trainer/rendezvous/peer_monitor.h"
#include "trainer/rendezvous/peer_wait.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp::cuda {
namespace {

constexpr char kUniqueIdKey[] = "dmlp/nccl-unique-id";
constexpr std::chrono::milliseconds kInitPoll{1};

}  // namespace

NcclComm::NcclComm(ncclComm_t comm, int rank, int world_size, std::chrono::milliseconds heartbeat,
                   std::shared_ptr<PeerLoss> peer_loss)
    : comm_(comm),
      rank_(rank),
      world_size_(world_size),
      heartbeat_(heartbeat),
      peer_loss_(std::move(peer_loss)) {}

Result<std::unique_ptr<NcclComm>> NcclComm::Create(Rendezvous& rendezvous,
                                                   std::chrono::milliseconds heartbeat) {
  const int rank = rendezvous.rank();
  const int world_size = rendezvous.world_size();
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank == 0) {
    NCCL_CHECK(nullptr, ncclGetUniqueId(&id));
    DMLP_RETURN_IF_ERROR(
        rendezvous.Set(kUniqueIdKey, std::string_view(id.internal, sizeof id.internal)));
  } else {
    DMLP_ASSIGN_OR_RETURN(const std::string bytes, rendezvous.Get(kUniqueIdKey));
    if (bytes.size() != sizeof id.internal)
      return Status::Error(kProtocolError, "NCCL unique id of " + std::to_string(bytes.size()) +
                                                 " bytes, expected " +
                                                 std::to_string(sizeof id.internal));
    std::memcpy(id.internal, bytes.data(), sizeof id.internal);
  }

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t started = ncclCommInitRankConfig(&comm, world_size, id, rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    Status error = NcclErrorStatus(started, comm,
                                   "ncclCommInitRankConfig(&comm, world_size, id, rank, &config)",
                                   __FILE__, __LINE__);
    if (comm != nullptr) (void)ncclCommAbort(comm);
    return error;
  }
  // Joining is a wait on every peer: bounded by the heartbeat in running time.
  PeerWait wait(heartbeat);
  for (;;) {
    ncclResult_t state = ncclInProgress;
    const ncclResult_t queried = ncclCommGetAsyncError(comm, &state);
    if (queried != ncclSuccess) state = queried;
    if (state == ncclSuccess) break;
    if (state != ncclInProgress) {
      Status error =
          NcclErrorStatus(state, comm, "ncclCommInitRankConfig (asynchronous)", __FILE__, __LINE__);
      (void)ncclCommAbort(comm);
      return error;
    }
    if (wait.Expired()) {
      (void)ncclCommAbort(comm);
      return Status::Error(kRendezvousTimeout,
                           "rank " + std::to_string(rank) + ": NCCL communicator of " +
                               std::to_string(world_size) +
                               " ranks not complete within HEARTBEAT_TIMEOUT_SECONDS");
    }
    wait.SleepSlice(kInitPoll);
  }
  return std::unique_ptr<NcclComm>(
      new NcclComm(comm, rank, world_size, heartbeat, rendezvous.peer_loss()));
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;
  if (!failed_.load()) {
    // Finalize flushes what this rank still owes its peers (a proxy may hold
    // the last bytes of a send whose kernel already finished).
    const ncclResult_t started = ncclCommFinalize(comm_);
    if (started == ncclSuccess || started == ncclInProgress) {
      PeerWait wait(heartbeat_);
      for (;;) {
        ncclResult_t state = ncclInProgress;
        if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
        if (state == ncclSuccess) {
          (void)ncclCommDestroy(comm_);
          return;
        }
        if (state != ncclInProgress || wait.Expired()) break;
        wait.SleepSlice(kInitPoll);
      }
    }
  }
  // Abort ends any NCCL kernel still waiting on a peer, so device memory can be freed.
  (void)ncclCommAbort(comm_);
}

Status NcclComm::CheckPeerLoss() const {
  if (peer_loss_ == nullptr || !peer_loss_->lost()) return Status::Ok();
  failed_.store(true);  // the destructor aborts: no kernel stays blocked on the lost peer
  return peer_loss_->failure();
}

Status NcclComm::CheckAsyncError() const {
  DMLP_RETURN_IF_ERROR(CheckPeerLoss());
  ncclResult_t state = ncclSuccess;
  NCCL_CHECK(comm_, ncclCommGetAsyncError(comm_, &state));
  if (state == ncclSuccess || state == ncclInProgress) return Status::Ok();
  failed_.store(true);
  return NcclErrorStatus(state, comm_, "ncclCommGetAsyncError(comm, &state)", __FILE__, __LINE__);
}

Status NcclComm::WaitEnqueued(const char* what) const {
  PollBackoff backoff;  // bounded by the peers' liveness, not a deadline: a frozen job only waits longer
  for (;;) {
    DMLP_RETURN_IF_ERROR(CheckPeerLoss());
    ncclResult_t state = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(comm_, &state);
    if (queried != ncclSuccess) state = queried;
    if (state == ncclSuccess) return Status::Ok();
    if (state != ncclInProgress) {
      failed_.store(true);
      return NcclErrorStatus(state, comm_, what, __FILE__, __LINE__);
    }
    backoff.Pause();
  }
}

Status NcclComm::AllToAllSlices(const float* partials, size_t local_shards, size_t stride,
                                size_t slice, float* receive, cudaStream_t stream) {
  const size_t bytes = slice * sizeof(float);
  for (size_t shard = 0; shard < local_shards; ++shard) {
    const size_t own = static_cast<size_t>(rank_);
    CUDA_CHECK(cudaMemcpyAsync(receive + (own * local_shards + shard) * slice,
                               partials + shard * stride + own * slice, bytes,
                               cudaMemcpyDeviceToDevice, stream));
  }
  // Sends to one peer and receives from it are matched in issue order, shard 0 first.
  NCCL_CHECK(comm_, ncclGroupStart());
  for (int peer = 0; peer < world_size_; ++peer) {
    if (peer == rank_) continue;
    const size_t q = static_cast<size_t>(peer);
    for (size_t shard = 0; shard < local_shards; ++shard) {
      NCCL_CHECK(comm_, ncclSend(partials + shard * stride + q * slice, slice, ncclFloat, peer,
                                 comm_, stream));
      NCCL_CHECK(comm_, ncclRecv(receive + (q * local_shards + shard) * slice, slice, ncclFloat,
                                 peer, comm_, stream));
    }
  }
  const ncclResult_t ended = ncclGroupEnd();
  if (ended != ncclSuccess && ended != ncclInProgress) {
    failed_.store(true);
    return NcclErrorStatus(ended, comm_, "ncclGroupEnd() of the slice all-to-all", __FILE__,
                           __LINE__);
  }
  return WaitEnqueued("ncclGroupEnd() of the slice all-to-all (asynchronous)");
}

Status NcclComm::AllGather(const float* send, float* receive, size_t count, cudaStream_t stream) {
  const ncclResult_t started = ncclAllGather(send, receive, count, ncclFloat, comm_, stream);
  if (started != ncclSuccess && started != ncclInProgress) {
    failed_.store(true);
    return NcclErrorStatus(started, comm_,
                           "ncclAllGather(send, receive, count, ncclFloat, comm, stream)", __FILE__,
                           __LINE__);
  }
  return WaitEnqueued("ncclAllGather (asynchronous)");
}

Status NcclComm::AllReduceSum(float* data, size_t count, cudaStream_t stream) {
  const ncclResult_t started = ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream);
  if (started != ncclSuccess && started != ncclInProgress) {
    failed_.store(true);
    return NcclErrorStatus(started, comm_,
                           "ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm, stream)",
                           __FILE__, __LINE__);
  }
  return WaitEnqueued("ncclAllReduce (asynchronous)");
}

Result<std::string> NcclComm::LibraryVersion() { return CheckedNcclLibraryVersion(); }

}  // namespace dmlp::cuda
