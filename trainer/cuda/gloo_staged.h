// defines: GlooStagedCollectives
//
// COLLECTIVES=gloo on the CUDA platform: each collective copies the device
// slices into pinned host memory, runs the CPU platform's Gloo collective
// (cpu/collectives_gloo.h) and copies the result back, on the update's
// stream. No NCCL communicator exists, so several ranks may share one GPU
// (NCCL refuses two ranks on one device). With REDUCTION=ordered the bytes
// that arrive are the bytes NCCL would deliver and the same fold kernel adds
// them, so the receipts equal the NCCL path's; REDUCTION=allreduce sums with
// Gloo's order instead of NCCL's (docs/determinism.md promises allreduce bits only
// within one configuration; the fingerprint records which library summed).
//
// Cost: every collective waits on the host for its device->host copy, then
// for Gloo over TCP, so the GPU idles during the exchange. It exists to prove
// multi-rank behaviour on a one-GPU machine, not for speed.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "common/status.h"
#include "trainer/collectives.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/device_collectives.h"

namespace dmlp {
class Rendezvous;
}

namespace dmlp::cuda {

class GlooStagedCollectives final : public DeviceCollectives {
 public:
  /// Connects Gloo's full mesh through `rendezvous` (as the CPU platform does).
  static Result<std::unique_ptr<GlooStagedCollectives>> Connect(Rendezvous& rendezvous);
  ~GlooStagedCollectives() override;
  GlooStagedCollectives(const GlooStagedCollectives&) = delete;
  GlooStagedCollectives& operator=(const GlooStagedCollectives&) = delete;

  Status AllToAllSlices(const float* partials, size_t local_shards, size_t stride, size_t slice,
                        float* receive, cudaStream_t stream) override;
  /// In place too: `send` reaches the host before anything is copied back.
  Status AllGather(const float* send, float* receive, size_t count, cudaStream_t stream) override;
  Status AllReduceSum(float* data, size_t count, cudaStream_t stream) override;
  /// Gloo fails each call synchronously: nothing is ever pending on a peer.
  Status CheckAsyncError() const override { return Status::Ok(); }
  void MarkFailed() override {}
  std::string Description() const override;

 private:
  GlooStagedCollectives(std::unique_ptr<Collectives> gloo, CudaEvent copied);
  /// Pinned staging of at least `floats` each way (grown when needed, kept).
  Status Reserve(size_t floats, cudaStream_t stream);
  /// Blocks until the copies queued on `stream` so far are done (device->host).
  Status WaitForCopies(cudaStream_t stream);

  std::unique_ptr<Collectives> gloo_;
  CudaEvent copied_;
  float* send_host_ = nullptr;  // pinned
  float* recv_host_ = nullptr;  // pinned
  size_t capacity_ = 0;         // floats in each
  int rank_ = 0;
  int world_size_ = 1;
};

}  // namespace dmlp::cuda
