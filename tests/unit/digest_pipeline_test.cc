// The digest pipeline against a fake backend whose snapshot copies finish in
// a scrambled order (the waiter sleeps a step-dependent while), so that K
// hashers really overtake each other: the sink must still see step order.
#include "trainer/output/digest_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/state_digest.h"

namespace dmlp {
namespace {

constexpr size_t kImageBytes = 4096;

std::atomic<int> live_buffers{0};
// Copies begun and not yet waited for, and buffers freed while one was pending
// (on CUDA: cudaFreeHost under a cudaMemcpyAsync still writing into it).
std::atomic<int> unwaited_copies{0};
std::atomic<int> freed_under_a_copy{0};
void FreeCounted(uint8_t* buffer) {
  --live_buffers;
  if (unwaited_copies.load() != 0) ++freed_under_a_copy;
  delete[] buffer;
}

/// The state after update v is kImageBytes bytes of (v * 31 + i) mod 251.
void FillImage(int64_t version, uint8_t* image) {
  for (size_t i = 0; i < kImageBytes; ++i) image[i] = uint8_t((version * 31 + int64_t(i)) % 251);
}

class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(int64_t fail_copy_at = 0) : fail_copy_at_(fail_copy_at) {}

  nlohmann::json Fingerprint() const override { return nlohmann::json::object(); }
  DeviceIdentity Device() const override { return {"cpu", "test", "", "", ""}; }
  Result<SnapshotBuffer> AllocateSnapshotBuffer() override {
    ++allocations;
    ++live_buffers;
    return SnapshotBuffer(new uint8_t[kImageBytes], &FreeCounted);
  }
  Status LoadState(const uint8_t*) override { return Status::Ok(); }
  Status ComputePartials(int64_t, int64_t) override { return Status::Ok(); }
  Status ReduceAndApply() override {
    ++version_;
    return Status::Ok();
  }
  Result<float> LastLoss() override { return 1.0f; }
  Result<SnapshotWaiter> BeginSnapshot(uint8_t* buffer) override {
    const int64_t version = version_;
    {
      std::lock_guard lock(mutex);
      ++snapshots_begun;
      max_in_flight = std::max(max_in_flight, snapshots_begun - snapshots_sunk);
    }
    const int64_t fail_at = fail_copy_at_;
    ++unwaited_copies;
    // The copy "lands" when the waiter runs: early steps late, so hashers overtake.
    return SnapshotWaiter([buffer, version, fail_at]() -> Status {
      --unwaited_copies;
      std::this_thread::sleep_for(std::chrono::milliseconds((7 - version % 4) * 2));
      if (version == fail_at) return Status::Error("FAKE_COPY_ERROR", "the copy failed");
      FillImage(version, buffer);
      return Status::Ok();
    });
  }

  void Sunk() {
    std::lock_guard lock(mutex);
    ++snapshots_sunk;
  }

  std::mutex mutex;
  int64_t snapshots_begun = 0, snapshots_sunk = 0, max_in_flight = 0;
  int allocations = 0;

 private:
  const int64_t fail_copy_at_;
  int64_t version_ = 0;  // updates so far; the step after one update per step
};

struct Outcome {
  Status status;
  std::vector<std::string> records;  // "step loss digest", in sink order
  int64_t max_in_flight = 0;
  int allocations = 0;
};

/// Runs `steps` steps through a pipeline of `threads` hashers.
Outcome RunSteps(int threads, int64_t steps, int64_t fail_copy_at = 0, int64_t fail_sink_at = 0) {
  FakeBackend backend(fail_copy_at);
  Outcome outcome;
  std::mutex records_mutex;
  DigestPipeline pipeline(
      backend, kImageBytes,
      [&](int64_t step, const std::string& loss, const std::string& digest,
          const uint8_t* image) -> Status {
        uint8_t expected[kImageBytes];
        FillImage(step, expected);
        EXPECT_EQ(std::memcmp(image, expected, kImageBytes), 0) << "step " << step;
        EXPECT_EQ(digest, DigestStateStep(expected, kImageBytes)) << "step " << step;
        {
          std::lock_guard lock(records_mutex);
          outcome.records.push_back(std::to_string(step) + " " + loss + " " + digest);
        }
        backend.Sunk();
        if (step == fail_sink_at) return Status::Error("FAKE_SINK_ERROR", "sink refused");
        return Status::Ok();
      },
      threads);
  EXPECT_TRUE(pipeline.Start().ok());
  for (int64_t step = 1; step <= steps && outcome.status.ok(); ++step) {
    EXPECT_TRUE(backend.Update(step, 0).ok());
    outcome.status = pipeline.Submit(step, "loss" + std::to_string(step));
  }
  Status drained = pipeline.Drain();
  if (outcome.status.ok()) outcome.status = drained;
  EXPECT_EQ(drained, outcome.status);
  outcome.max_in_flight = backend.max_in_flight;
  outcome.allocations = backend.allocations;
  return outcome;
}

TEST(DigestPipelineTest, SinkSequenceIsIdenticalForOneTwoAndFourHashers) {
  const Outcome one = RunSteps(1, 24);
  ASSERT_TRUE(one.status.ok()) << one.status.ToString();
  ASSERT_EQ(one.records.size(), 24u);
  for (size_t i = 0; i < one.records.size(); ++i)
    EXPECT_EQ(one.records[i].substr(0, one.records[i].find(' ')), std::to_string(i + 1));
  for (int threads : {2, 4}) {
    const Outcome many = RunSteps(threads, 24);
    ASSERT_TRUE(many.status.ok()) << many.status.ToString();
    EXPECT_EQ(many.records, one.records) << threads << " hashers";
  }
}

TEST(DigestPipelineTest, NeverHoldsMoreThanKPlusOneBuffers) {
  for (int threads : {1, 2, 4}) {
    const Outcome outcome = RunSteps(threads, 40);
    ASSERT_TRUE(outcome.status.ok()) << outcome.status.ToString();
    EXPECT_EQ(outcome.allocations, threads + 1);
    EXPECT_LE(outcome.max_in_flight, threads + 1);
    EXPECT_GE(outcome.max_in_flight, 2);  // the pipeline did overlap steps
  }
  EXPECT_EQ(live_buffers.load(), 0);  // all freed with the pipeline
}

TEST(DigestPipelineTest, ACopyFailureAtStepSFailsTheRankAtSAfterTheStepsBefore) {
  for (int threads : {1, 2, 4}) {
    const Outcome outcome = RunSteps(threads, 20, /*fail_copy_at=*/7);
    EXPECT_EQ(outcome.status.ToString(), "FAKE_COPY_ERROR: digest of step 7: the copy failed")
        << threads << " hashers";
    ASSERT_EQ(outcome.records.size(), 6u) << threads << " hashers";  // 1..6, nothing after
    EXPECT_EQ(outcome.records.back().substr(0, 2), "6 ");
  }
}

TEST(DigestPipelineTest, ASinkFailureStopsEverythingAfterIt) {
  for (int threads : {1, 4}) {
    const Outcome outcome = RunSteps(threads, 20, 0, /*fail_sink_at=*/5);
    EXPECT_EQ(outcome.status.ToString(), "FAKE_SINK_ERROR: sink refused");
    ASSERT_EQ(outcome.records.size(), 5u) << threads << " hashers";
    EXPECT_EQ(outcome.records.back().substr(0, 2), "5 ");
  }
}

// A step dropped after an earlier failure still has its copy in flight: the
// pipeline waits for it before the buffer can be freed. One hasher:
// step 1's sink fails only once step 2 is submitted, so step 2 is dropped.
TEST(DigestPipelineTest, ADroppedStepsCopyIsWaitedForBeforeItsBufferGoes) {
  unwaited_copies = 0;
  freed_under_a_copy = 0;
  {
    FakeBackend backend;
    std::atomic<bool> second_submitted{false};
    DigestPipeline pipeline(
        backend, kImageBytes,
        [&](int64_t step, const std::string&, const std::string&, const uint8_t*) -> Status {
          while (!second_submitted) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          return step == 1 ? Status::Error("FAKE_SINK_ERROR", "sink refused") : Status::Ok();
        },
        1);
    ASSERT_TRUE(pipeline.Start().ok());
    ASSERT_TRUE(backend.Update(1, 0).ok());
    ASSERT_TRUE(pipeline.Submit(1, "loss1").ok());
    ASSERT_TRUE(backend.Update(2, 0).ok());
    EXPECT_TRUE(pipeline.Submit(2, "loss2").ok());  // a buffer was free: no failure yet
    second_submitted = true;
    EXPECT_EQ(pipeline.Drain().ToString(), "FAKE_SINK_ERROR: sink refused");
  }
  EXPECT_EQ(unwaited_copies.load(), 0);
  EXPECT_EQ(freed_under_a_copy.load(), 0);
}

TEST(DigestPipelineTest, DefaultThreadsAreHalfTheCpusPerRankFromOneToEight) {
  EXPECT_EQ(DefaultDigestThreads(2, 1), 1);
  EXPECT_EQ(DefaultDigestThreads(2, 2), 1);
  EXPECT_EQ(DefaultDigestThreads(1, 4), 1);
  EXPECT_EQ(DefaultDigestThreads(16, 1), 8);
  EXPECT_EQ(DefaultDigestThreads(16, 4), 2);
  EXPECT_EQ(DefaultDigestThreads(96, 8), 6);
  EXPECT_EQ(DefaultDigestThreads(256, 1), 8);
}

}  // namespace
}  // namespace dmlp
