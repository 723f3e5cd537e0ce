// defines: RendezvousOptions, Rendezvous
//
// How the ranks of one job find each other and agree before training: rank 0
// serves a coordinator (rendezvous_server.h) at COORDINATOR_ADDRESS:PORT, and
// every rank, rank 0 included, joins it as a client. It carries the plan
// fingerprint check, a key-value store (Gloo's rendezvous, the NCCL unique id),
// named barriers and all-gathers of small values (the divergence check).
//
// Every wait on a peer is bounded by HEARTBEAT_TIMEOUT_SECONDS of *running*
// time (peer_wait.h), so a job frozen with SIGSTOP or CRIU for longer than that
// and continued does not time out. Error codes a user can see:
//   COORDINATOR_PORT_IN_USE: <addr>:<port>       rank 0 could not bind
//   RENDEZVOUS_TIMEOUT: rank R: <what was awaited>
//   PLAN_MISMATCH: rank R: <difference>           on every rank
//   JOB_MISMATCH: rank R: ...                     this rank reached another job's coordinator
//   PEER_LOST: rank R: <why>                      a rank left, dropped or went silent while others wait
//   PROTOCOL_ERROR: <detail>                      a malformed frame
// After any error the Rendezvous is broken: later calls return that error.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "trainer/rendezvous/peer_monitor.h"
#include "trainer/rendezvous/peer_wait.h"

namespace dmlp {

class RendezvousServer;
struct Message;

struct RendezvousOptions {
  std::string address = "127.0.0.1";  // COORDINATOR_ADDRESS: rank 0 binds it, all connect to it
  int port = 0;                       // COORDINATOR_PORT, 1..65535
  int rank = 0;                       // PROCESS_ID, 0 <= rank < world_size
  int world_size = 1;                 // NUM_PROCESSES
  int heartbeat_timeout_seconds = 1;  // HEARTBEAT_TIMEOUT_SECONDS: bound of every wait on a peer
  std::string job_id;                 // job_identity.h; the coordinator turns away other jobs' ranks
  std::string plan_fingerprint;       // equal on all ranks; best as "NAME=value" lines (see DescribePlanDifference)
  WaitClock* clock = nullptr;         // tests only; null = the steady clock
};

class Rendezvous {
 public:
  /// Rank 0 starts the coordinator; every rank connects (retrying while the
  /// coordinator is not up yet), sends its plan fingerprint and waits until all
  /// ranks joined. Each of the two phases may take the heartbeat timeout.
  static Result<std::unique_ptr<Rendezvous>> Join(const RendezvousOptions& options);
  /// Close()s if not closed yet (ignoring its status).
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  /// Stores `value` (any bytes) under `key`, visible to every rank; overwrites.
  Status Set(std::string_view key, std::string_view value);
  /// The value of `key`, waiting until some rank has set it.
  Result<std::string> Get(std::string_view key);
  /// Returns once every rank has called Barrier(name); names may be reused.
  Status Barrier(std::string_view name);
  /// Every rank's `value` (at most kMaxGatherValueBytes), indexed by rank, once
  /// every rank called AllGather(name); names may be reused once a round
  /// completed, and the coordinator keeps nothing of a completed round.
  /// Bounded like Barrier; a rank lost meanwhile is PEER_LOST.
  Result<std::vector<std::string>> AllGather(std::string_view name, std::string_view value);
  /// Another connection of this rank to the coordinator, with the same calls
  /// and bounds, for a thread whose waits must not hold up this one's: each
  /// connection carries one request at a time, so the digest pipeline's
  /// divergence check (a GATHER that waits for every rank's step) and the step
  /// loop's shard audit (a GET) each need their own. Abandon() on this
  /// rendezvous abandons its lanes too; closing a lane is no departure.
  /// REQUIRES: joined; this rendezvous outlives the lane.
  Result<std::unique_ptr<Rendezvous>> OpenLane();
  /// Says goodbye. On rank 0 then keeps the coordinator up until every rank has
  /// said goodbye or dropped (bounded), so late ranks are never cut off.
  Status Close();
  /// Starts this rank's liveness monitor (peer_monitor.h) on its own
  /// connection: from now on a peer silent for the heartbeat timeout is
  /// declared on peer_loss(), which abandons this rendezvous. REQUIRES: joined.
  Status StartPeerMonitor();
  /// Stops the monitor (before Close, so that the end of the job is no loss).
  void StopPeerMonitor();
  /// Where a lost peer is declared; never null.
  const std::shared_ptr<PeerLoss>& peer_loss() const { return peer_loss_; }

  /// For a rank that is failing: makes any call blocked in another thread fail
  /// at once and makes Close() leave without waiting for peers (rank 0 stops
  /// the coordinator, so the others see PEER_LOST instead of waiting on us).
  /// Safe to call from any thread, any number of times.
  void Abandon();

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  /// COORDINATOR_PORT.
  int port() const { return options_.port; }
  /// The local IP address this rank used to reach the coordinator (numeric),
  /// i.e. an address its peers can reach it on; Gloo binds its device to it.
  const std::string& local_address() const { return local_address_; }
  std::chrono::milliseconds heartbeat_timeout() const;

 private:
  explicit Rendezvous(const RendezvousOptions& options);
  WaitClock& clock() const;
  std::string Where() const;
  Status Connect();
  /// A new connected socket to the coordinator, retrying within `wait`; -1 when
  /// `wait` expired (`last_error` says why), COORDINATOR_ADDRESS_INVALID.
  Result<int> Dial(PeerWait& wait, std::string* last_error);
  Status SendHello();
  /// Sends `request`, waits for its reply; maps transport outcomes to user codes.
  /// `awaited` names what a timeout was waiting for; rank 0 adds `missing()` ranks.
  Result<Message> Call(const Message& request, const std::string& awaited,
                       const std::function<std::vector<int>()>& missing = {});
  Status Broken(Status status);
  /// A lane of this rendezvous is going away (its destructor).
  void ForgetLane(Rendezvous* lane);

  RendezvousOptions options_;
  std::unique_ptr<RendezvousServer> server_;  // rank 0 only
  int fd_ = -1;
  std::string local_address_;
  std::mutex mu_;  // one request at a time
  Status broken_;
  bool closed_ = false;
  std::atomic<bool> abandoned_{false};
  std::atomic<int> live_fd_{-1};  // fd_ as seen by Abandon(), which takes no lock
  std::shared_ptr<PeerLoss> peer_loss_ = std::make_shared<PeerLoss>();
  std::unique_ptr<PeerMonitor> monitor_;
  // Lanes (rendezvous_lane.cc): a lane knows the rendezvous that opened it,
  // which knows its open lanes, so that Abandon() reaches every connection.
  Rendezvous* parent_ = nullptr;
  std::mutex lanes_mu_;  // guards lanes_; never held while calling the coordinator
  std::vector<Rendezvous*> lanes_;
};

}  // namespace dmlp
