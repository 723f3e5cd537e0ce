// defines: SharedSizes, SharedMemoryCollectives, LocalHostIdentity, ConnectCpuCollectives
//
// The CPU platform's collectives when every rank runs on one host, through
// one shared memory segment: dmlp-train's ordered reduction runs in place in
// it (each rank computes its partials there and folds its slice of everyone's
// between two barriers: no byte copied), and AllToAll, AllGather and Barrier
// move bytes through it with one copy in and one out, where Gloo's TCP pairs
// cost two copies through the kernel, system calls and wake-ups of Gloo's
// loop thread (two ranks on two CPUs, train_bench.py's configuration: 9.3-11.8 ms of
// every 58-65 ms update were the two TCP exchanges; in place, 0.9-1.3 ms;
// docs/performance.md).
// AllReduceSum stays Gloo's: the library that adds is in the fingerprint, and
// with shared memory or TCP a job's receipts are the same bits.
//
// The segment is a memfd that rank 0 creates; the other ranks open it
// through /proc/<rank 0's pid>/fd/<fd>, so it needs no name in a file system
// and CRIU dumps and restores its pages with the job (tests/e2e/criu). Its
// layout: a header (per rank, in its own cache line, the number of operations
// it has published, a futex word; then the checksums, below); the reduction
// area (every rank's partial gradients and the reduced vector, which the
// CPU backend computes into and the ordered reduction folds from in place,
// so it copies nothing: two barriers, collectives_shm_reduction.cc); and
// per rank two outboxes of `capacity` bytes for AllToAll and AllGather. Operation n (counted alike on every rank, since every call is
// collective) writes outbox n % 2, publishes n, waits until every peer
// published n and reads their outboxes n % 2. Two outboxes need no second
// wait: a peer has read my outbox n % 2 of operation n - 2 before it
// published n - 1, which this rank waited for in operation n - 1. A call
// larger than the outboxes grows them, every rank alike, after a barrier.
//
// What a rank publishes carries a checksum (slice_checksum.h) that its
// readers recompute from the bytes they read: every outbox block, after its
// copy, and every slice of the reduction area (SealSlice, CheckSlice), where
// the reduction's fold and the CPU backend's optimizer take it from the values they load
// (checksummed_passes.h). Any process of the same user (or
// root) can write into the segment through /proc/<pid>/fd; a stray write
// between publisher and reader then fails the call with COLLECTIVE_ERROR
// instead of reaching a receipt. A writer who also rewrites the checksum, or
// writes before the publisher checksums, is not caught (docs/reliability.md).
//
// Waits spin briefly, then sleep on the peer's futex word in slices of
// kWaitSlice; between slices a declared peer loss (the heartbeat, as with
// Gloo) or a hung-up Gloo connection (the peer process ended: its sockets
// closed, zombie or not) fails the call with COLLECTIVE_ERROR. A frozen peer
// is waited for. After an error every later call fails with it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "trainer/collectives.h"
#include "trainer/cpu_transport.h"

namespace dmlp {

class GlooCollectives;
class PeerLoss;
class Rendezvous;

/// Ranks with equal identities run on one host and can share memory: the
/// kernel's boot id, the host name (UTS), and the pid and IPC namespaces (a
/// peer's /proc/<pid> must be that peer).
std::string LocalHostIdentity();

/// What the shared segment holds besides its header.
struct SharedSizes {
  size_t outbox_bytes = 0;    // the largest AllToAll / AllGather call's (a larger one grows them)
  size_t partial_floats = 0;  // per rank, in the reduction area (SharedMemoryCollectives::Partials)
  size_t reduced_floats = 0;  // the reduced vector, in the reduction area (Reduced)
  // The reduction area's unit of checksums (SealSlice); 0: none. REQUIRES:
  // divides partial_floats and reduced_floats.
  size_t slice_floats = 0;
};

/// Connects the CPU platform's collectives: the Gloo mesh always
/// (GlooCollectives::Connect), and with `transport` auto or shm a segment
/// shared by the ranks when their `host_identity` values (gathered through
/// the rendezvous) are all equal, sized by `sizes`. Decided alike on every
/// rank: any rank's tcp wins; shm with ranks on several hosts is
/// COLLECTIVE_ERROR on every rank; shm with a segment that a rank cannot make
/// or share (RLIMIT_FSIZE, memory, /proc) is COLLECTIVE_ERROR on that rank,
/// and the others wait until it leaves (its caller reports and abandons the
/// rendezvous), then return the wait's PEER_LOST; auto falls back to TCP
/// then, with a warning. REQUIRES: `rendezvous` joined, world_size > 1.
Result<std::unique_ptr<Collectives>> ConnectCpuCollectives(
    Rendezvous& rendezvous, CpuTransport transport, const SharedSizes& sizes,
    const std::string& host_identity = LocalHostIdentity());

class SharedMemoryCollectives final : public Collectives, public SliceSeals {
 public:
  /// How long one sleep on a peer's futex lasts before the loss checks run again.
  static constexpr std::chrono::milliseconds kWaitSlice{20};

  ~SharedMemoryCollectives() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  /// Gloo's: fingerprint.collectives names the library that adds (a bit with
  /// REDUCTION=allreduce); fingerprint.transport says what moved the bytes.
  std::string Description() const override;
  const char* TransportName() const override { return "shared memory"; }

  // The ordered reduction in place in the reduction area, when there is one
  // (collectives_shm_reduction.cc); else through the outboxes, as any Collectives.
  ReductionArea Area() override;
  Result<ShardSlices> Exchange(const float* partials, size_t local_shards, size_t stride,
                               size_t slice) override;
  Status FoldExchanged(ShardFold& fold, ShardSlices exchanged, size_t shards, size_t slice,
                       float* own) override;
  Status Gather(float* own, float* reduced, size_t slice) override;

  Status AllToAll(const float* send, float* recv, size_t count_per_peer) override;
  Status AllGather(const float* send, float* recv, size_t count_per_rank) override;
  /// Gloo's (see the top of this file).
  Status AllReduceSum(float* data, size_t count) override;
  Status Barrier() override;

  /// Bytes of each outbox now (tests: a large call grows them).
  size_t capacity() const { return capacity_; }

  /// The reduction area (SharedSizes): rank r's partial_floats, which r writes
  /// and every rank may read between two Barrier()s, and the reduced vector,
  /// whose slices the ranks write likewise. The reduction folds straight from
  /// and into it, so the ordered reduction copies no byte at all. The same
  /// addresses for the collectives' life; null when the size asked was 0.
  float* Partials(int rank) const;
  float* Reduced() const;

  /// Publishes `checksum` (slice_checksum.h) of the reduction area's slice
  /// that starts at `slice`, which this rank has just written, for the ranks
  /// that read it after the next Barrier(). REQUIRES: SharedSizes::slice_floats
  /// > 0, `slice` at a multiple of it from Partials(0).
  void SealSlice(const float* slice, uint64_t checksum) override;
  /// After this rank read the slice at `slice` and computed `checksum` of
  /// what it read: COLLECTIVE_ERROR naming the slice and its writer when its
  /// writer sealed another (its bytes changed in between); then every later
  /// call fails with it. REQUIRES: as SealSlice, sealed before the Barrier()
  /// this rank passed since.
  Status CheckSlice(const float* slice, uint64_t checksum) override;

 private:
  friend Result<std::unique_ptr<Collectives>> ConnectCpuCollectives(Rendezvous&, CpuTransport,
                                                                    const SharedSizes&, const std::string&);
  struct Slot;  // a rank's line of the header

  SharedMemoryCollectives(std::unique_ptr<GlooCollectives> gloo, std::shared_ptr<PeerLoss> peer_loss,
                          int rank, int world_size);
  /// Rank 0 creates the segment; the others open rank 0's fd `fd` of process `pid`.
  Status Attach(int owner_pid, int owner_fd, const SharedSizes& sizes);
  /// Sets the segment's size for `capacity` bytes per outbox (never past RLIMIT_FSIZE).
  Status Resize(size_t capacity);
  /// (Re)maps the outboxes, which follow the header and the reduction area.
  Status MapOutboxes(size_t capacity);
  /// Bytes of all outboxes at `capacity` bytes each.
  size_t OutboxesBytes(size_t capacity) const;
  Slot& SlotOf(int rank) const;
  uint8_t* Outbox(int rank, uint32_t operation) const;
  /// The checksum table: one word per reduction area slice, then one per
  /// outbox block ([rank][operation % 2][block]).
  std::atomic<uint64_t>* Checksums() const;
  std::atomic<uint64_t>& OutboxChecksum(int rank, uint32_t operation, int block) const;
  /// Copies `bytes` of `rank`'s outbox block `block` of the current operation to `to`, then checks them.
  Status ReadOutboxBlock(const char* op, int rank, int block, size_t offset, size_t bytes, uint8_t* to);
  /// Where the area's slice `index` lies, in words ("rank 1's partials, slice 3").
  std::string DescribeSlice(size_t index) const;
  /// Begins operation op_ + 1 whose outbox needs `bytes`; grows the outboxes first if needed.
  Status Begin(const char* op, size_t bytes);
  /// Publishes the current operation and waits until every peer published it.
  Status PublishAndWait(const char* op);
  Status AwaitPeer(const char* op, int peer);
  Status Fail(const char* op, const std::string& what);

  std::unique_ptr<GlooCollectives> gloo_;
  std::shared_ptr<PeerLoss> peer_loss_;
  int rank_;
  int world_size_;
  int fd_ = -1;                 // the memfd (rank 0 created it)
  uint8_t* base_ = nullptr;     // the header and the reduction area: fixed_bytes_
  size_t fixed_bytes_ = 0;
  size_t header_bytes_ = 0;     // the lines and the checksum table, page-rounded
  size_t partial_floats_ = 0;
  size_t reduced_floats_ = 0;
  size_t slice_floats_ = 0;
  size_t area_slices_ = 0;       // checksummed slices in the reduction area
  uint8_t* outboxes_ = nullptr;  // 2 * world_size outboxes of capacity_ bytes
  size_t capacity_ = 0;          // bytes per outbox
  uint32_t op_ = 0;             // operations begun (wraps; compared as a difference)
  Status broken_;
};

}  // namespace dmlp
