#include "trainer/output/digest_pipeline.h"

#include <chrono>

#include "common/state_digest.h"

namespace dmlp {

DigestPipeline::DigestPipeline(Backend& backend, size_t image_bytes, Sink sink)
    : backend_(backend), image_bytes_(image_bytes), sink_(std::move(sink)) {}

DigestPipeline::~DigestPipeline() {
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

Status DigestPipeline::Start() {
  for (int i = 0; i < 2; ++i) {
    DMLP_ASSIGN_OR_RETURN(SnapshotBuffer buffer, backend_.AllocateSnapshotBuffer());
    buffers_.push_back(std::move(buffer));
  }
  worker_ = std::thread([this] { WorkerLoop(); });
  return Status::Ok();
}

Status DigestPipeline::Submit(int64_t step, std::string loss) {
  int buffer = 0;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !failure_.ok() || !busy_[next_buffer_]; });
    if (!failure_.ok()) return failure_;
    buffer = next_buffer_;
    busy_[buffer] = true;
    next_buffer_ = 1 - next_buffer_;
  }
  // The backend is driven from this (the main) thread only; the worker only waits.
  Result<SnapshotWaiter> waiter = backend_.BeginSnapshot(buffers_[buffer].get());
  std::unique_lock lock(mutex_);
  if (!waiter.ok()) {
    busy_[buffer] = false;
    if (failure_.ok()) failure_ = waiter.status();
    return failure_;
  }
  queue_.push_back(Job{step, std::move(loss), buffer, std::move(*waiter)});
  changed_.notify_all();
  return Status::Ok();
}

Status DigestPipeline::Drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !failure_.ok() || (queue_.empty() && !busy_[0] && !busy_[1]); });
  return failure_;
}

double DigestPipeline::hash_seconds() const {
  std::unique_lock lock(mutex_);
  return hash_seconds_;
}

void DigestPipeline::WorkerLoop() {
  while (true) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Status status = job.waiter();
    std::string digest;
    if (status.ok()) {
      auto start = std::chrono::steady_clock::now();
      digest = DigestStateStep(buffers_[job.buffer].get(), image_bytes_);
      std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
      std::unique_lock lock(mutex_);
      hash_seconds_ += spent.count();
    }
    if (status.ok()) status = sink_(job.step, job.loss, digest, buffers_[job.buffer].get());
    std::unique_lock lock(mutex_);
    busy_[job.buffer] = false;
    last_buffer_ = job.buffer;
    if (!status.ok() && failure_.ok()) failure_ = status;
    changed_.notify_all();
    if (!failure_.ok()) {
      queue_.clear();
      return;
    }
  }
}

}  // namespace dmlp
