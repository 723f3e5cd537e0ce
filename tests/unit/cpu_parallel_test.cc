#include "trainer/cpu/cpu_parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace dmlp {
namespace {

// Restores one thread after each test: other tests in this binary expect it.
class CpuParallelTest : public ::testing::Test {
 protected:
  void TearDown() override { SetCpuParallelThreads(1); }
};

// The pieces ParallelRanges handed out, in the order they were recorded.
std::vector<std::pair<size_t, size_t>> Pieces(size_t count, size_t grain) {
  std::mutex mutex;
  std::vector<std::pair<size_t, size_t>> pieces;
  ParallelRanges(count, grain, [&](size_t begin, size_t end) {
    std::lock_guard lock(mutex);
    pieces.emplace_back(begin, end);
  });
  return pieces;
}

TEST_F(CpuParallelTest, PiecesCoverEveryIndexOnceInWholeGrains) {
  for (int threads : {1, 2, 3, 8}) {
    SetCpuParallelThreads(threads);
    for (size_t count : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{100}, size_t{4097},
                         size_t{100003}}) {
      for (size_t grain : {size_t{1}, size_t{4}, size_t{16}}) {
        std::vector<int> seen(count, 0);
        for (const auto& [begin, end] : Pieces(count, grain)) {
          ASSERT_LT(begin, end);
          ASSERT_LE(end, count);
          if (end != count) {
            EXPECT_EQ((end - begin) % grain, 0u) << begin << ".." << end;
          }
          for (size_t i = begin; i < end; ++i) ++seen[i];
        }
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(seen[i], 1) << "threads " << threads << " count " << count << " grain " << grain << " index " << i;
      }
    }
  }
}

TEST_F(CpuParallelTest, OneThreadOrLittleWorkIsOnePieceOnTheCaller) {
  SetCpuParallelThreads(1);
  EXPECT_EQ(Pieces(1 << 20, 16), (std::vector<std::pair<size_t, size_t>>{{0, 1 << 20}}));
  SetCpuParallelThreads(4);
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id ran_on;
  ParallelRanges(63, 16, [&](size_t, size_t) { ran_on = std::this_thread::get_id(); });  // 63 < 16 x 4
  EXPECT_EQ(ran_on, caller);
  EXPECT_EQ(Pieces(63, 16).size(), 1u);
}

TEST_F(CpuParallelTest, ThreadCountIsAtLeastOne) {
  SetCpuParallelThreads(0);
  EXPECT_EQ(CpuParallelThreads(), 1);
}

#ifdef _OPENMP
TEST_F(CpuParallelTest, RunsOnSeveralThreadsWhenThereIsEnoughWork) {
  SetCpuParallelThreads(2);
  EXPECT_EQ(CpuParallelThreads(), 2);
  std::mutex mutex;
  std::vector<std::thread::id> threads;
  std::atomic<int> waiting{0};
  ParallelRanges(1 << 16, 16, [&](size_t, size_t) {
    {
      std::lock_guard lock(mutex);
      threads.push_back(std::this_thread::get_id());
    }
    // Both pieces are in flight at once: each waits for the other to arrive.
    ++waiting;
    while (waiting.load() < 2) std::this_thread::yield();
  });
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_NE(threads[0], threads[1]);
}
#endif

}  // namespace
}  // namespace dmlp
