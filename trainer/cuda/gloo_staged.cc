#include "trainer/cuda/gloo_staged.h"

#include <utility>

#include "trainer/cpu/collectives_gloo.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/stream_wait.h"

namespace dmlp::cuda {

Result<std::unique_ptr<GlooStagedCollectives>> GlooStagedCollectives::Connect(
    Rendezvous& rendezvous) {
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<GlooCollectives> gloo, GlooCollectives::Connect(rendezvous));
  DMLP_ASSIGN_OR_RETURN(CudaEvent copied, CudaEvent::Create());
  return std::unique_ptr<GlooStagedCollectives>(
      new GlooStagedCollectives(std::move(gloo), std::move(copied)));
}

GlooStagedCollectives::GlooStagedCollectives(std::unique_ptr<Collectives> gloo, CudaEvent copied)
    : gloo_(std::move(gloo)),
      copied_(std::move(copied)),
      rank_(gloo_->rank()),
      world_size_(gloo_->world_size()) {}

GlooStagedCollectives::~GlooStagedCollectives() {
  // The backend waits for its stream before its collectives go, so no copy
  // still reads these buffers.
  (void)cudaFreeHost(send_host_);
  (void)cudaFreeHost(recv_host_);
}

std::string GlooStagedCollectives::Description() const {
  return gloo_->Description() + ", staged through host memory";
}

Status GlooStagedCollectives::Reserve(size_t floats, cudaStream_t stream) {
  if (floats <= capacity_) return Status::Ok();
  if (capacity_ > 0) DMLP_RETURN_IF_ERROR(WaitForCopies(stream));  // an earlier copy may read them
  (void)cudaFreeHost(send_host_);
  (void)cudaFreeHost(recv_host_);
  send_host_ = recv_host_ = nullptr;
  capacity_ = 0;
  void* send = nullptr;
  void* recv = nullptr;
  CUDA_CHECK(cudaMallocHost(&send, floats * sizeof(float)));
  send_host_ = static_cast<float*>(send);
  CUDA_CHECK(cudaMallocHost(&recv, floats * sizeof(float)));
  recv_host_ = static_cast<float*>(recv);
  capacity_ = floats;
  return Status::Ok();
}

Status GlooStagedCollectives::WaitForCopies(cudaStream_t stream) {
  CUDA_CHECK(cudaEventRecord(copied_.get(), stream));
  return WaitForEvent(copied_.get(), nullptr);  // device work only: no peer behind it
}

// Host staging, one call at a time: every call first waits for its own
// device->host copy on `stream`, which the stream runs after the previous
// call's host->device copy, so a buffer is never rewritten while still read.
Status GlooStagedCollectives::AllToAllSlices(const float* partials, size_t local_shards,
                                             size_t stride, size_t slice, float* receive,
                                             cudaStream_t stream) {
  const size_t world = static_cast<size_t>(world_size_);
  const size_t per_peer = local_shards * slice;  // Gloo's block for one peer
  DMLP_RETURN_IF_ERROR(Reserve(world * per_peer, stream));
  // send block q = [shard 0's slice q][shard 1's slice q]...: one strided copy per shard.
  for (size_t shard = 0; shard < local_shards; ++shard) {
    CUDA_CHECK(cudaMemcpy2DAsync(send_host_ + shard * slice, per_peer * sizeof(float),
                                 partials + shard * stride, slice * sizeof(float),
                                 slice * sizeof(float), world, cudaMemcpyDeviceToHost, stream));
  }
  DMLP_RETURN_IF_ERROR(WaitForCopies(stream));
  // Gloo's receive block p = rank p's shards' slices: [rank][local shard][slice], as receive.
  DMLP_RETURN_IF_ERROR(gloo_->AllToAll(send_host_, recv_host_, per_peer));
  CUDA_CHECK(cudaMemcpyAsync(receive, recv_host_, world * per_peer * sizeof(float),
                             cudaMemcpyHostToDevice, stream));
  return Status::Ok();
}

Status GlooStagedCollectives::AllGather(const float* send, float* receive, size_t count,
                                        cudaStream_t stream) {
  const size_t world = static_cast<size_t>(world_size_);
  DMLP_RETURN_IF_ERROR(Reserve(world * count, stream));
  float* own = recv_host_ + static_cast<size_t>(rank_) * count;
  CUDA_CHECK(cudaMemcpyAsync(own, send, count * sizeof(float), cudaMemcpyDeviceToHost, stream));
  DMLP_RETURN_IF_ERROR(WaitForCopies(stream));
  DMLP_RETURN_IF_ERROR(gloo_->AllGather(own, recv_host_, count));  // in place
  CUDA_CHECK(cudaMemcpyAsync(receive, recv_host_, world * count * sizeof(float),
                             cudaMemcpyHostToDevice, stream));
  return Status::Ok();
}

Status GlooStagedCollectives::AllReduceSum(float* data, size_t count, cudaStream_t stream) {
  DMLP_RETURN_IF_ERROR(Reserve(count, stream));
  CUDA_CHECK(cudaMemcpyAsync(recv_host_, data, count * sizeof(float), cudaMemcpyDeviceToHost,
                             stream));
  DMLP_RETURN_IF_ERROR(WaitForCopies(stream));
  DMLP_RETURN_IF_ERROR(gloo_->AllReduceSum(recv_host_, count));
  CUDA_CHECK(cudaMemcpyAsync(data, recv_host_, count * sizeof(float), cudaMemcpyHostToDevice,
                             stream));
  return Status::Ok();
}

}  // namespace dmlp::cuda
