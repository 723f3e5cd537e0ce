// defines: Collectives
//
// The collectives a platform provides to the trainer: Gloo over TCP on the CPU
// platform (collectives_gloo.h), NCCL on the CUDA platform. Buffers are in the
// platform's memory (host memory for Gloo); counts are in floats.
//
// With REDUCTION=ordered the trainer uses only AllToAll and AllGather, which
// move bytes and never add, so the library's algorithm choice cannot change a
// bit; AllReduceSum serves REDUCTION=allreduce, where the result must still be
// bit-identical on every rank (an algorithm where each rank sums in its own
// order, like Gloo's legacy AllreduceRing, is not acceptable).
//
// Every call is collective: all ranks call it in the same order with the same
// counts. Errors are COLLECTIVE_ERROR: <op>: <what> (rank R), or the
// rendezvous' codes while the connections are being set up.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace dmlp {

class Collectives {
 public:
  virtual ~Collectives() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// Library and transport, for result.json's fingerprint (e.g. "gloo 0.5.0 tcp").
  virtual std::string Description() const = 0;

  /// `send` holds world_size blocks of `count_per_peer` floats, block q for rank q;
  /// afterwards `recv` holds world_size blocks, block p from rank p.
  /// REQUIRES: send and recv do not overlap.
  virtual Status AllToAll(const float* send, float* recv, size_t count_per_peer) = 0;
  /// `recv` (world_size * count_per_rank floats) gets every rank's `send`, in rank order.
  /// In place when send == recv + rank * count_per_rank; otherwise they must not overlap.
  virtual Status AllGather(const float* send, float* recv, size_t count_per_rank) = 0;
  /// In place: every rank ends with the same bits, the sum over ranks of `data`.
  virtual Status AllReduceSum(float* data, size_t count) = 0;
  /// Returns once every rank has called it.
  virtual Status Barrier() = 0;
};

}  // namespace dmlp
