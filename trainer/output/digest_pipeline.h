// defines: DigestPipeline, DefaultDigestThreads, DigestThreadsFor
//
// Hashes each step's state on background threads while the next steps
// compute. One SHA-256 is serial, but consecutive steps' digests are
// independent, so K hasher threads hash K steps at once from K+1 snapshot
// buffers: Submit() starts the backend's copy of the state into a free buffer
// (waiting while all K+1 are busy), a hasher waits for that copy and hashes
// the image, and the sink gets (step, loss, digest, image) strictly in
// submission order, one call at a time, so receipts and checkpoints are
// written exactly as with one thread (DIGEST_THREADS never changes a byte).
//
// Failures: the first failure in step order wins. A copy that fails at step s
// fails the rank with "digest of step s: ..."; the steps before s still go to
// the sink, nothing from s on does. Every later Submit/Drain returns it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "trainer/backend.h"

namespace dmlp {

/// The default hasher count for `cpus` usable CPUs shared by `ranks_on_host`
/// ranks: half of each rank's CPUs (the other half compute and copy), 1 to 8.
int DefaultDigestThreads(int cpus, int64_t ranks_on_host);
/// The plan's DIGEST_THREADS, else the default for this process's CPUs
/// (sched_getaffinity) shared by NUM_PROCESSES ranks (as if all on this host).
int DigestThreadsFor(const Plan& plan);

class DigestPipeline {
 public:
  /// Receives each step's receipt fields and its state image (valid during the
  /// call: checkpoints are written from it), on a hasher thread, in step order.
  using Sink = std::function<Status(int64_t step, const std::string& loss,
                                    const std::string& params_sha256, const uint8_t* image)>;

  /// REQUIRES: hasher_threads >= 1. Memory: hasher_threads + 1 state images.
  DigestPipeline(Backend& backend, size_t image_bytes, Sink sink, int hasher_threads = 1);
  ~DigestPipeline();  // lets the hashers finish the queued steps, then joins them
  DigestPipeline(const DigestPipeline&) = delete;
  DigestPipeline& operator=(const DigestPipeline&) = delete;

  /// Allocates the K+1 buffers and starts the K hashers.
  Status Start();
  /// Snapshots the state after `step` and queues its digest. Returns the first failure so far.
  Status Submit(int64_t step, std::string loss);
  /// Waits until every submitted step went to the sink (or was dropped after a
  /// failure); returns the first failure.
  Status Drain();
  /// The image of the last step that went to the sink. REQUIRES: Drain() returned ok after a Submit.
  const uint8_t* last_image() const { return buffers_[last_buffer_].get(); }
  /// Seconds the hashers spent hashing, summed over threads (for the benchmark's split of a step):
  /// wall time, and the CPU time the hashing threads got in it (the rest is waiting for a core).
  double hash_seconds() const;
  double hash_cpu_seconds() const;
  int hasher_threads() const { return hasher_threads_; }
  size_t image_bytes() const { return image_bytes_; }

 private:
  struct Job {
    int64_t step = 0;
    std::string loss;
    int buffer = 0;
    uint64_t sequence = 0;  // submission order: the sink's order
    SnapshotWaiter waiter;
  };
  void HasherLoop();
  /// Hashes a job's image once its copy is done; "" when the job is dropped.
  Status HashJob(const Job& job, std::string& digest);
  /// Keeps `status` when it is the earliest failure in step order. REQUIRES: mutex_ held.
  void RecordFailure(uint64_t sequence, const Status& status);

  Backend& backend_;
  const size_t image_bytes_;
  Sink sink_;
  const int hasher_threads_;
  std::vector<SnapshotBuffer> buffers_;  // hasher_threads_ + 1
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;    // submitted, not yet taken by a hasher
  std::vector<bool> busy_;   // per buffer: from Submit until its step left the sink
  uint64_t next_sequence_ = 0;
  uint64_t next_to_sink_ = 0;  // whose turn it is at the sink
  uint64_t failed_sequence_ = UINT64_MAX;  // jobs from here on are dropped
  int last_buffer_ = 0;
  bool stopping_ = false;
  Status failure_;
  double hash_seconds_ = 0;
  double hash_cpu_seconds_ = 0;
  std::vector<std::thread> hashers_;
};

}  // namespace dmlp
