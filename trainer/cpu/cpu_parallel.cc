#include "trainer/cpu/cpu_parallel.h"

#include <algorithm>
#include <atomic>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace dmlp {
namespace {

// Atomic: ranks run as threads of one process (the tests) each set it, to the same count.
std::atomic<int> parallel_threads{1};

}  // namespace

void SetCpuParallelThreads(int threads) {
#ifdef _OPENMP
  parallel_threads.store(std::max(1, threads), std::memory_order_relaxed);
#else
  (void)threads;
#endif
}

int CpuParallelThreads() { return parallel_threads.load(std::memory_order_relaxed); }

void ParallelRanges(size_t count, size_t grain, const std::function<void(size_t, size_t)>& body) {
  grain = std::max<size_t>(grain, 1);
  const size_t threads = static_cast<size_t>(parallel_threads.load(std::memory_order_relaxed));
  if (threads == 1 || count < grain * threads) {
    if (count > 0) body(0, count);
    return;
  }
  // Equal pieces rounded up to whole grains, so no two threads write the same
  // cache line when grain covers one.
  const size_t grains = (count + grain - 1) / grain;
  const size_t piece = (grains + threads - 1) / threads * grain;
#ifdef _OPENMP
#pragma omp parallel for num_threads(static_cast<int>(threads)) schedule(static, 1)
#endif
  for (size_t t = 0; t < threads; ++t) {
    const size_t begin = std::min(count, t * piece);
    const size_t end = std::min(count, begin + piece);
    if (begin < end) body(begin, end);
  }
}

}  // namespace dmlp
