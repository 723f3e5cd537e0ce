// defines: GlooCollectives
//
// The CPU platform's collectives: Gloo over TCP, full mesh, connected through
// our coordinator (GlooStore). Only Gloo's options-based algorithms are used
// (gloo::alltoall, gloo::allgather, gloo::allreduce, gloo::barrier). Measured
// with this Gloo: the legacy AllreduceRing class gives different bits on
// different ranks with 3 ranks, and the legacy AllreduceBcube wrong sums.
//
// Gloo's own operation timeout stays effectively infinite (a restored job
// must not time out); the heartbeat bounds the waits instead through the
// rendezvous' PeerLoss (peer_monitor.h): when a peer is lost, this rank's Gloo
// sockets are shut down, so a blocked operation fails at once, as it does when
// a peer dies, and the trainer reports the PEER_LOST behind it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/collectives.h"
#include "trainer/rendezvous/rendezvous.h"

namespace gloo {
class Context;
}

namespace dmlp {

class GlooCollectives final : public Collectives {
 public:
  /// Timeout Gloo applies to each operation once connected. Effectively none:
  /// a frozen peer (SIGSTOP, CRIU) must not kill the job, and a peer that dies
  /// closes its TCP connections, which fails the operation at once. Finite
  /// because Gloo adds it to steady_clock::now().
  static constexpr std::chrono::hours kOperationTimeout{24 * 365};

  /// Connects the full mesh through `rendezvous` (keys under `key_prefix`),
  /// binding Gloo's TCP device to the address this rank used to reach the
  /// coordinator. Waits on peers are bounded by the heartbeat timeout.
  /// Sets SIGPIPE to SIG_IGN if it is SIG_DFL (Gloo writes without MSG_NOSIGNAL).
  /// REQUIRES: `rendezvous` joined; it is not needed after this returns.
  static Result<std::unique_ptr<GlooCollectives>> Connect(Rendezvous& rendezvous,
                                                          const std::string& key_prefix = "gloo/");
  ~GlooCollectives() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string Description() const override;
  const char* TransportName() const override { return "tcp"; }

  Status AllToAll(const float* send, float* recv, size_t count_per_peer) override;
  Status AllGather(const float* send, float* recv, size_t count_per_rank) override;
  Status AllReduceSum(float* data, size_t count) override;
  Status Barrier() override;

  /// False once a Gloo connection of this rank hung up or errored (a peer
  /// process ended, or this rank shut them down after a peer loss): polls the
  /// pair sockets without reading them, and notices when Gloo has closed one.
  /// For waits outside Gloo (collectives_shm.h). Cheap: one poll(2), one fstat(2) per peer.
  bool ConnectionsIntact() const;

 private:
  GlooCollectives(std::shared_ptr<gloo::Context> context, int rank, int world_size);
  Status Error(const char* op, const std::string& what) const;

  std::shared_ptr<gloo::Context> context_;
  int rank_;
  int world_size_;
  std::shared_ptr<PeerLoss> peer_loss_;
  int abort_hook_ = -1;  // on peer_loss_: shuts down pair_sockets_
  std::vector<int> pair_sockets_;  // Gloo's connected TCP sockets (owned by Gloo)
  // Each pair socket's two addresses when connected: Gloo closes a pair's fd on
  // an error, and the number may come back as another file. (Not the inode:
  // CRIU restores a socket as a new one, with the same addresses.)
  std::vector<std::string> pair_ends_;
};

}  // namespace dmlp
