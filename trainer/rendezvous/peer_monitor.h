// defines: PeerLoss, PeerMonitor
//
// The ranks' side of the liveness rule (docs/reliability.md, HEARTBEAT_TIMEOUT_SECONDS): a
// peer silent for the heartbeat timeout while this rank keeps running is
// PEER_LOST, in every wait, collectives included (whose libraries wait with no
// bound of their own: Gloo's timeout must stay long so that a restored job is
// not killed, NCCL's non-blocking communicator has none).
//
// Each rank's PeerMonitor thread pings the coordinator on its own connection
// (WATCH, then PING -> PONG every ping interval). The coordinator counts the
// silence of each rank (silence_tracker.h) and answers a PING with PEER_LOST
// once any rank is lost; the monitor itself counts how long the coordinator
// (rank 0) has not answered. Both count only running time (peer_wait.h), so
// a rank that was itself frozen does not hold that time against its peers, and
// a whole job frozen and continued goes on.
//
// On a loss the monitor declares it on PeerLoss, whose hooks make every wait
// of this rank end at once: the rendezvous is abandoned, Gloo's sockets are
// shut down, the NCCL polling loops see failure() and abort the communicator.
// The trainer then reports PeerLoss's status (PEER_LOST: rank R: ...).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "trainer/rendezvous/peer_wait.h"
#include "trainer/rendezvous/rendezvous_wire.h"

namespace dmlp {

/// The first loss of a peer seen by this rank, and what must stop waiting then.
/// Thread-safe; shared by the monitor, the rendezvous and the collectives.
class PeerLoss {
 public:
  /// Ok while no peer was lost.
  Status failure() const;
  bool lost() const { return lost_.load(); }
  /// Records the first loss and runs every hook once (on the caller's thread).
  void Declare(const Status& status);
  /// Registers `hook`, run on Declare (at once when already lost); returns its id.
  int AddHook(std::function<void()> hook);
  /// Unregisters a hook (its owner is going away). Blocks while hooks run.
  void RemoveHook(int id);
  /// Waits until a loss is declared, at most `budget` (steady clock); lost().
  bool WaitUntilLost(std::chrono::milliseconds budget) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable declared_cv_;
  std::atomic<bool> lost_{false};
  Status failure_;
  std::map<int, std::function<void()>> hooks_;
  int next_id_ = 0;
};

class PeerMonitor {
 public:
  /// Pings at most this often; less when the heartbeat is short.
  static constexpr std::chrono::milliseconds kMaxPingInterval{500};

  /// Takes `fd`, a connected non-blocking socket to the coordinator; sends
  /// WATCH(rank, job_id) and one PING, and returns once its PONG came (the
  /// coordinator handles a connection's frames in order, so from then on it
  /// watches this rank: a rank frozen right after this call is still lost for
  /// its peers), pinging on from a thread. Losses are declared on `loss`. On
  /// failure `fd` is closed.
  static Result<std::unique_ptr<PeerMonitor>> Start(int fd, int rank, std::string job_id,
                                                    std::chrono::milliseconds heartbeat,
                                                    std::shared_ptr<PeerLoss> loss, WaitClock& clock);
  /// Stop()s.
  ~PeerMonitor();
  PeerMonitor(const PeerMonitor&) = delete;
  PeerMonitor& operator=(const PeerMonitor&) = delete;

  /// Stops pinging and closes the connection (the job ends, or this rank
  /// failed); a loss seen afterwards is not declared. Idempotent.
  void Stop();

  static std::chrono::milliseconds PingInterval(std::chrono::milliseconds heartbeat);

 private:
  PeerMonitor(int fd, int rank, std::string job_id, std::chrono::milliseconds heartbeat,
              std::shared_ptr<PeerLoss> loss, WaitClock& clock);
  void Run();
  /// One PING and its PONG; the loss when the answer says so or never comes.
  Status PingOnce();
  /// What a reply (or its absence) on the liveness connection means.
  Status Interpret(const Result<Message>& reply) const;
  /// Waits the ping interval, reading what the coordinator says unasked
  /// meanwhile (a loss it found, or its connection closing) into `heard`;
  /// false once Stop() was called.
  bool Pause(Status& heard);

  const int fd_;
  const int rank_;
  const std::string job_id_;
  const std::chrono::milliseconds heartbeat_;
  const std::shared_ptr<PeerLoss> loss_;
  WaitClock& clock_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dmlp
