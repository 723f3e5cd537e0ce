// defines: PollBackoff, PeerCheck, WaitForEvent
//
// How the host waits for the GPU without ever hanging silently or timing out.
// A wait that may depend on peers (anything queued behind an NCCL call) polls
// the event and, between polls, the communicator's asynchronous error and the
// rendezvous' peer liveness (NcclComm::CheckAsyncError): a peer that died or a
// broken connection ends the wait with NCCL_ERROR, a peer silent for the
// heartbeat while this rank runs with PEER_LOST, while a slow peer or a whole
// job frozen (SIGSTOP, CRIU) and continued just makes the wait longer. There
// is deliberately no wall-clock deadline here: the liveness rule is freeze-
// discounted (peer_monitor.h), a deadline would not be.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

#include "common/status.h"

namespace dmlp::cuda {

/// Pacing of a host polling loop: the first polls only yield (most waits end
/// within microseconds), later ones sleep 100 us so a long wait (a slow or
/// frozen peer) does not burn a core the hasher thread could use.
class PollBackoff {
 public:
  void Pause();

 private:
  int polls_ = 0;
};

/// Returns an error once the peers can no longer complete queued work; null: no peers.
using PeerCheck = std::function<Status()>;

/// Blocks until `event` has completed: CUDA_ERROR for an asynchronous device
/// error, the check's error when the peers failed. Yields, then sleeps briefly
/// between polls (at most ~100 us of added latency).
Status WaitForEvent(cudaEvent_t event, const PeerCheck& peers);

}  // namespace dmlp::cuda
