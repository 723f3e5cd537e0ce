// defines: DigestPipeline
//
// Hashes each step's state on a background thread while the next step
// computes. Two snapshot buffers alternate: Submit() starts the backend's copy
// of the state into a free buffer (waiting while both are busy), the worker
// waits for that copy, hashes the image and hands (step, loss, digest) to the
// sink — in submission order, so receipts stay in order. The first failure of
// the copy, the hash or the sink is kept and returned by every later call, so
// a failure in the thread fails the rank.
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

class DigestPipeline {
 public:
  /// Receives each step's receipt fields and its state image (valid during the
  /// call: checkpoints are written from it), on the worker thread, in step order.
  using Sink = std::function<Status(int64_t step, const std::string& loss,
                                    const std::string& params_sha256, const uint8_t* image)>;

  DigestPipeline(Backend& backend, size_t image_bytes, Sink sink);
  ~DigestPipeline();  // drains, then joins the worker
  DigestPipeline(const DigestPipeline&) = delete;
  DigestPipeline& operator=(const DigestPipeline&) = delete;

  /// Allocates the two buffers and starts the worker.
  Status Start();
  /// Snapshots the state after `step` and queues its digest. Returns the first failure so far.
  Status Submit(int64_t step, std::string loss);
  /// Waits until every submitted step went to the sink; returns the first failure.
  Status Drain();
  /// The most recently hashed image. REQUIRES: Drain() returned ok after a Submit.
  const uint8_t* last_image() const { return buffers_[last_buffer_].get(); }
  /// Seconds the worker spent hashing (for the benchmark's split of a step).
  double hash_seconds() const;

 private:
  struct Job {
    int64_t step;
    std::string loss;
    int buffer;
    SnapshotWaiter waiter;
  };
  void WorkerLoop();

  Backend& backend_;
  const size_t image_bytes_;
  Sink sink_;
  std::vector<SnapshotBuffer> buffers_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  bool busy_[2] = {false, false};
  int next_buffer_ = 0;
  int last_buffer_ = 0;
  bool stopping_ = false;
  Status failure_;
  double hash_seconds_ = 0;
  std::thread worker_;
};

}  // namespace dmlp
