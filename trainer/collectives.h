// defines: Collectives
//
// The CPU platform's collectives, in host memory: Gloo over TCP
// (cpu/collectives_gloo.h) or a segment shared by the ranks of one host
// (cpu/collectives_shm.h). Counts are in floats.
//
// Each is the ordered reduction's transport (trainer/reduction/): by default
// it exchanges the partials' slices with AllToAll and gathers the folded
// slices with AllGather, which move bytes and never add, so the library's
// algorithm choice cannot change a bit. AllReduceSum serves
// REDUCTION=allreduce, where the result must still be bit-identical on every
// rank (an algorithm where each rank sums in its own order, like Gloo's
// legacy AllreduceRing, is not acceptable).
//
// Every call is collective: all ranks call it in the same order with the same
// counts. Errors are COLLECTIVE_ERROR: <op>: <what> (rank R), or the
// rendezvous' codes while the connections are being set up.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/reduction/reduction_transport.h"

namespace dmlp {

class Collectives : public ReductionTransport {
 public:
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// Library and transport, for result.json's fingerprint (e.g. "gloo 0.5.0 tcp").
  virtual std::string Description() const = 0;
  /// What moves the reduction's bytes, for result.json's fingerprint.transport
  /// ("tcp", "shared memory"): never a bit (common/bit_settings.h).
  virtual const char* TransportName() const = 0;

  /// The reduction's exchange through AllToAll, via a receive buffer kept
  /// between updates (the local partials packed first when there are several).
  Result<ShardSlices> Exchange(const float* partials, size_t local_shards, size_t stride,
                               size_t slice) override;
  /// AllGather in place.
  Status Gather(float* own, float* reduced, size_t slice) override;

  /// `send` holds world_size blocks of `count_per_peer` floats, block q for rank q;
  /// afterwards `recv` holds world_size blocks, block p from rank p.
  /// REQUIRES: send and recv do not overlap.
  virtual Status AllToAll(const float* send, float* recv, size_t count_per_peer) = 0;
  /// `recv` (world_size * count_per_rank floats) gets every rank's `send`, in rank order.
  /// In place when send == recv + rank * count_per_rank; otherwise they must not overlap.
  virtual Status AllGather(const float* send, float* recv, size_t count_per_rank) = 0;
  /// In place: every rank ends with the same bits, the sum over ranks of `data`.
  Status AllReduceSum(float* data, size_t count) override = 0;
  /// Returns once every rank has called it.
  virtual Status Barrier() = 0;

 private:
  std::vector<float> exchange_send_, exchange_receive_;  // Exchange's, sized by its first call
};

}  // namespace dmlp
