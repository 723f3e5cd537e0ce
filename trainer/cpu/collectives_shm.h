// defines: SharedMemoryCollectives, LocalHostIdentity, ConnectCpuCollectives
//
// The CPU platform's collectives when every rank runs on one host: AllToAll,
// AllGather and Barrier move their bytes through one shared memory segment,
// one copy in and one copy out per byte, where Gloo's TCP pairs cost two
// copies through the kernel, two system calls per chunk and a wake-up of
// Gloo's loop thread (two ranks on two CPUs, issue 4's configuration: 9.7 ms
// of every update's 58 were the two TCP exchanges, docs/performance.md).
// AllReduceSum stays Gloo's: the library that adds is in the fingerprint, and
// with shared memory or TCP a job's receipts are the same bits.
//
// The segment is a memfd that rank 0 creates; the other ranks open it
// through /proc/<rank 0's pid>/fd/<fd>, so it needs no name in a file system
// and CRIU dumps and restores its pages with the job (tests/e2e/criu). Its
// layout: a header (per rank, in its own cache line, the number of operations
// it has published, a futex word) and per rank two outboxes of `capacity`
// bytes. Operation n (counted alike on every rank, since every call is
// collective) writes outbox n % 2, publishes n, waits until every peer
// published n and reads their outboxes n % 2. Two outboxes need no second
// wait: a peer has read my outbox n % 2 of operation n - 2 before it
// published n - 1, which this rank waited for in operation n - 1. A call
// larger than the outboxes grows them, every rank alike, after a barrier.
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
#include "trainer/cpu/cpu_transport.h"

namespace dmlp {

class GlooCollectives;
class PeerLoss;
class Rendezvous;

/// Ranks with equal identities run on one host and can share memory: the
/// kernel's boot id, the host name (UTS), and the pid and IPC namespaces (a
/// peer's /proc/<pid> must be that peer).
std::string LocalHostIdentity();

/// Connects the CPU platform's collectives: the Gloo mesh always
/// (GlooCollectives::Connect), and with `transport` auto or shm a segment
/// shared by the ranks when their `host_identity` values (gathered through
/// the rendezvous) are all equal, its outboxes sized for `capacity` bytes
/// (the largest call's: a larger one grows them). Decided alike on every
/// rank: any rank's tcp wins; shm with ranks on several hosts, or a segment
/// that cannot be made or shared (RLIMIT_FSIZE, memory, /proc), is
/// COLLECTIVE_ERROR on every rank; auto falls back to TCP then, with a
/// warning. REQUIRES: `rendezvous` joined, world_size > 1.
Result<std::unique_ptr<Collectives>> ConnectCpuCollectives(
    Rendezvous& rendezvous, CpuTransport transport, size_t capacity,
    const std::string& host_identity = LocalHostIdentity());

class SharedMemoryCollectives final : public Collectives {
 public:
  /// How long one sleep on a peer's futex lasts before the loss checks run again.
  static constexpr std::chrono::milliseconds kWaitSlice{20};

  ~SharedMemoryCollectives() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  /// Gloo's: fingerprint.collectives names the library that adds (a bit with
  /// REDUCTION=allreduce); fingerprint.transport says what moved the bytes.
  std::string Description() const override;

  Status AllToAll(const float* send, float* recv, size_t count_per_peer) override;
  Status AllGather(const float* send, float* recv, size_t count_per_rank) override;
  /// Gloo's (see the top of this file).
  Status AllReduceSum(float* data, size_t count) override;
  Status Barrier() override;

  /// Bytes of each outbox now (tests: a large call grows them).
  size_t capacity() const { return capacity_; }

 private:
  friend Result<std::unique_ptr<Collectives>> ConnectCpuCollectives(Rendezvous&, CpuTransport, size_t,
                                                                    const std::string&);
  struct Slot;  // a rank's line of the header

  SharedMemoryCollectives(std::unique_ptr<GlooCollectives> gloo, std::shared_ptr<PeerLoss> peer_loss,
                          int rank, int world_size);
  /// Rank 0 creates the segment; the others open rank 0's fd `fd` of process `pid`.
  Status Attach(int owner_pid, int owner_fd, size_t capacity);
  /// Sets the segment's size for `capacity` bytes per outbox (never past RLIMIT_FSIZE).
  Status Resize(size_t capacity);
  Status Map(size_t capacity);
  Slot& SlotOf(int rank) const;
  uint8_t* Outbox(int rank, uint32_t operation) const;
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
  uint8_t* base_ = nullptr;     // the mapping
  size_t mapped_bytes_ = 0;
  size_t capacity_ = 0;         // bytes per outbox
  uint32_t op_ = 0;             // operations begun (wraps; compared as a difference)
  Status broken_;
};

}  // namespace dmlp
