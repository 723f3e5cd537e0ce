#include "trainer/cuda/stream_wait.h"

#include <chrono>
#include <thread>

#include "trainer/cuda/cuda_check.h"

namespace dmlp::cuda {

void PollBackoff::Pause() {
  constexpr int kYieldingPolls = 200;
  if (polls_ < kYieldingPolls) {
    ++polls_;
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

Status WaitForEvent(cudaEvent_t event, const PeerCheck& peers) {
  PollBackoff backoff;
  for (;;) {
    const cudaError_t state = cudaEventQuery(event);
    if (state == cudaSuccess) return Status::Ok();
    if (state != cudaErrorNotReady)
      return CudaErrorStatus(state, "cudaEventQuery(event)", __FILE__, __LINE__);
    if (peers) DMLP_RETURN_IF_ERROR(peers());
    backoff.Pause();
  }
}

}  // namespace dmlp::cuda
