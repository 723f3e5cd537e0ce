#include "trainer/output/digest_pipeline.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>

#include "common/state_digest.h"
#include "common/thread_start.h"

namespace dmlp {
namespace {

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), seconds; 0 where unknown.
double ThreadCpuSeconds() {
  timespec now{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace

int DefaultDigestThreads(int cpus, int64_t ranks_on_host) {
  // Half of a rank's CPUs: measured on the 2-core development machine, a
  // second hasher per rank bought nothing on the CPU platform (the GEMMs use
  // every core and the digest keeps up with one), while on a GPU host the
  // compute needs little CPU and the hashers must keep up with the device.
  // 8 is where SHA-NI hashers keep up with a step of a few ms (bench/digest_bench).
  const int64_t per_rank = std::max<int64_t>(1, cpus / std::max<int64_t>(1, ranks_on_host));
  return static_cast<int>(std::clamp<int64_t>(per_rank / 2, 1, 8));
}

int DigestThreadsFor(const Plan& plan) {
  if (plan.digest_threads > 0) return static_cast<int>(plan.digest_threads);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int available = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return DefaultDigestThreads(available, plan.num_processes);
}

DigestPipeline::DigestPipeline(Backend& backend, size_t image_bytes, Sink sink, int hasher_threads)
    : backend_(backend),
      image_bytes_(image_bytes),
      sink_(std::move(sink)),
      hasher_threads_(std::max(1, hasher_threads)) {}

DigestPipeline::~DigestPipeline() {
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  for (std::thread& hasher : hashers_) hasher.join();
}

Status DigestPipeline::Start() {
  for (int i = 0; i <= hasher_threads_; ++i) {
    DMLP_ASSIGN_OR_RETURN(SnapshotBuffer buffer, backend_.AllocateSnapshotBuffer());
    buffers_.push_back(std::move(buffer));
  }
  busy_.assign(buffers_.size(), false);
  hashers_.reserve(static_cast<size_t>(hasher_threads_));  // a started thread is never dropped by a throw
  for (int i = 0; i < hasher_threads_; ++i) {
    // Those started before a refusal are joined by the destructor.
    DMLP_ASSIGN_OR_RETURN(std::thread hasher,
                          StartThread("digest hasher " + std::to_string(i + 1) + " of " +
                                          std::to_string(hasher_threads_) + ", DIGEST_THREADS",
                                      [this] { HasherLoop(); }));
    hashers_.push_back(std::move(hasher));
  }
  return Status::Ok();
}

Status DigestPipeline::Submit(int64_t step, std::string loss) {
  int buffer = 0;
  uint64_t sequence = 0;
  {
    std::unique_lock lock(mutex_);
    auto free_buffer = [&] { return std::find(busy_.begin(), busy_.end(), false); };
    changed_.wait(lock, [&] { return !failure_.ok() || free_buffer() != busy_.end(); });
    if (!failure_.ok()) return failure_;
    buffer = static_cast<int>(free_buffer() - busy_.begin());
    busy_[buffer] = true;
    sequence = next_sequence_++;
  }
  // The backend is driven from this (the main) thread only; the hashers only wait.
  Result<SnapshotWaiter> waiter = backend_.BeginSnapshot(buffers_[buffer].get());
  std::unique_lock lock(mutex_);
  if (!waiter.ok()) {
    // Queued as a failed job so that it takes its turn: the steps before it
    // still reach the sink, and the sequence stays without holes.
    RecordFailure(sequence, waiter.status());
    queue_.push_back(Job{step, std::move(loss), buffer, sequence, nullptr});
    changed_.notify_all();
    return failure_;
  }
  queue_.push_back(Job{step, std::move(loss), buffer, sequence, std::move(*waiter)});
  changed_.notify_all();
  return Status::Ok();
}

Status DigestPipeline::Drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return next_to_sink_ == next_sequence_; });
  return failure_;
}

double DigestPipeline::hash_seconds() const {
  std::unique_lock lock(mutex_);
  return hash_seconds_;
}

double DigestPipeline::hash_cpu_seconds() const {
  std::unique_lock lock(mutex_);
  return hash_cpu_seconds_;
}

void DigestPipeline::RecordFailure(uint64_t sequence, const Status& status) {
  if (sequence >= failed_sequence_) return;
  failed_sequence_ = sequence;
  failure_ = status;
}

Status DigestPipeline::HashJob(const Job& job, std::string& digest) {
  bool dropped = false;
  {
    std::unique_lock lock(mutex_);
    dropped = job.sequence >= failed_sequence_;
  }
  Status copied = job.waiter();
  // Dropped after an earlier failure: no need to hash, but the copy was waited
  // for above, since on CUDA it is a DMA into this pinned buffer that would
  // still be writing when the buffer is reused or freed. Its error is moot.
  if (dropped) return Status::Ok();
  if (!copied.ok()) return copied.WithContext("digest of step " + std::to_string(job.step));
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = ThreadCpuSeconds();
  digest = DigestStateStep(buffers_[job.buffer].get(), image_bytes_);
  const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
  const double cpu_spent = ThreadCpuSeconds() - cpu_start;
  std::unique_lock lock(mutex_);
  hash_seconds_ += spent.count();
  hash_cpu_seconds_ += cpu_spent;
  return Status::Ok();
}

void DigestPipeline::HasherLoop() {
  while (true) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    // Jobs are taken in sequence order, so every job before this one is held
    // by another hasher that gets to the sink without waiting for this one.
    std::string digest;
    Status status = job.waiter ? HashJob(job, digest) : Status::Ok();
    bool sink = false;
    {
      std::unique_lock lock(mutex_);
      if (!status.ok()) RecordFailure(job.sequence, status);
      changed_.wait(lock, [&] { return next_to_sink_ == job.sequence; });
      sink = job.sequence < failed_sequence_;
    }
    if (sink) status = sink_(job.step, job.loss, digest, buffers_[job.buffer].get());
    std::unique_lock lock(mutex_);
    if (sink && status.ok()) last_buffer_ = job.buffer;
    if (sink && !status.ok()) RecordFailure(job.sequence, status);
    busy_[job.buffer] = false;
    ++next_to_sink_;
    changed_.notify_all();
  }
}

}  // namespace dmlp
