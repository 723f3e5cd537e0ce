#include "trainer/cuda/stream_wait.h"

#include <chrono>
#include <thread>

#include "trainer/cuda/cuda_check.h"

namespace dmlp::cuda {

Status WaitForEvent(cudaEvent_t event, const PeerCheck& peers) {
  // The first polls only yield: most waits end within microseconds of being
  // asked (the host runs ahead of the GPU by at most a step). Longer waits
  // sleep so a waiting rank does not burn a core the hasher thread could use.
  constexpr int kYieldingPolls = 200;
  constexpr auto kSleep = std::chrono::microseconds(100);
  for (int poll = 0;; ++poll) {
    const cudaError_t state = cudaEventQuery(event);
    if (state == cudaSuccess) return Status::Ok();
    if (state != cudaErrorNotReady)
      return CudaErrorStatus(state, "cudaEventQuery(event)", __FILE__, __LINE__);
    if (peers) DMLP_RETURN_IF_ERROR(peers());
    if (poll < kYieldingPolls) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kSleep);
    }
  }
}

}  // namespace dmlp::cuda
