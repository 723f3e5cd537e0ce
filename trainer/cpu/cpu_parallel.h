// defines: SetCpuParallelThreads, CpuParallelThreads, ParallelRanges
//
// The CPU platform's element-wise work (data generation, the MLP's bias/ReLU
// passes, the ordered fold, Adam) split across the rank's CPU threads, the same
// threads the GEMM uses: with OpenMP, BLIS's own thread pool (libgomp), whose
// workers would otherwise spin idle between GEMM calls.
//
// Bits: ParallelRanges only cuts [0, count) into contiguous pieces; the body
// must make each element (or row, column, sample) depend on nothing but its
// own inputs, and then no split, thread count or timing can change a bit. Every
// caller's comment says why its body qualifies.
#pragma once

#include <cstddef>
#include <functional>

namespace dmlp {

/// Threads the ranges use from now on (>= 1; the GEMM's count). Call before
/// training starts, from the main thread. Without OpenMP there is one.
void SetCpuParallelThreads(int threads);
int CpuParallelThreads();

/// Calls body(begin, end) on disjoint pieces that cover [0, count) once, each
/// a multiple of `grain` long except the last, in parallel when it pays (count
/// of at least `grain` * threads); returns when all are done. Called from one
/// thread at a time; body must not throw.
void ParallelRanges(size_t count, size_t grain, const std::function<void(size_t, size_t)>& body);

}  // namespace dmlp
