// defines: RendezvousServer
//
// The coordinator: a small TCP key-value and barrier service that rank 0 runs
// on a thread at COORDINATOR_ADDRESS:COORDINATOR_PORT. Every rank, rank 0
// included, talks to it through a Rendezvous client (rendezvous.h); the frame
// format is in rendezvous_wire.h.
//
// The server never times out a request by itself: it answers when it can, and
// the clients bound their waits (freeze-tolerant, peer_wait.h). What it decides:
//   - who belongs: a HELLO or WATCH with another job id (job_identity.h) gets
//     JOB_MISMATCH and its connection is dropped; nothing of this job changes
//     and nothing of its plan is told. Connections that have not identified
//     themselves are capped (kMaxPendingConnections, the oldest is dropped) and
//     may send only small control frames (rendezvous_wire.h FrameLimits);
//   - join: complete once every rank sent HELLO with rank 0's plan fingerprint
//     and world size; otherwise every rank (also those still to come) gets the
//     same PLAN_MISMATCH (or PROTOCOL_ERROR for a rank that joins twice);
//   - lanes: a joined rank may open more request connections (LANE), so that
//     one of its threads waiting on a GET or GATHER never holds up another's
//     requests; a lane is served like the rank's first connection, but only
//     that one (and WATCH) speak for the rank: a lane that closes, with or
//     without BYE, is no departure;
//   - liveness: a rank that opened its WATCH connection and then goes silent
//     (no PING) for the heartbeat timeout of this server's running time
//     (silence_tracker.h) is lost, as below;
//   - a rank that leaves (BYE) or drops (connection closed without BYE) makes
//     every wait that is pending or comes later fail with PEER_LOST: rank R;
//   - out of descriptors (EMFILE/ENFILE at accept), it backs off instead of
//     retrying at once, and after kAcceptAttempts the join (or every wait)
//     fails with RESOURCE_EXHAUSTED naming RLIMIT_NOFILE;
//   - gather: a round holds the values given so far; once every rank gave
//     its value, each gets all of them and the round is forgotten (so a name
//     reused every step costs one round's memory, not one key per step);
//   - it keeps serving until every rank has left, so late ranks are never cut
//     off (rank 0's Rendezvous::Close waits for that, bounded).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"
#include "trainer/rendezvous/plan_difference.h"
#include "trainer/rendezvous/peer_wait.h"
#include "trainer/rendezvous/rendezvous_wire.h"
#include "trainer/rendezvous/silence_tracker.h"

namespace dmlp {

class RendezvousServer {
 public:
  /// Connections that have not said HELLO or WATCH yet, at most; beyond, the oldest is dropped.
  static constexpr size_t kMaxPendingConnections = 64;
  /// Failed accepts for want of a descriptor before the job fails (about 2.5 s of backoff).
  static constexpr int kAcceptAttempts = 8;
  static constexpr std::chrono::milliseconds kMaxAcceptBackoff{1000};

  struct Config {
    int world_size = 1;
    std::string job_id;            // a HELLO/WATCH with another one is a stranger
    std::string plan_fingerprint;  // every rank's must equal it
    std::chrono::milliseconds heartbeat{1000};  // silence that makes a watched rank lost
    WaitClock* clock = nullptr;    // null: the steady clock
  };

  /// Binds address:port and starts serving on a thread. Errors:
  /// COORDINATOR_PORT_IN_USE: addr:port, COORDINATOR_BIND_FAILED, COORDINATOR_ADDRESS_INVALID.
  static Result<std::unique_ptr<RendezvousServer>> Start(const std::string& address, int port, Config config);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  /// Waits until every rank has left (or dropped) and the server ended, counting
  /// only running time against `budget`; then stops it. RENDEZVOUS_TIMEOUT names
  /// the ranks that joined but never left. Ranks that never connected are waited
  /// for only when the join failed (so they still get the failure).
  Status WaitUntilAllLeft(std::chrono::milliseconds budget, WaitClock& clock);
  /// Stops serving now, closing every connection, and joins the thread. Idempotent.
  void Stop();

  /// Ranks that have not sent HELLO yet.
  std::vector<int> MissingFromJoin() const;
  /// Ranks that have not arrived at barrier `name` (all ranks if none has).
  std::vector<int> MissingFromBarrier(const std::string& name) const;
  /// Ranks that have not given their value to gather `name` (all ranks if none has).
  std::vector<int> MissingFromGather(const std::string& name) const;

 private:
  enum class RankState { kAbsent, kJoined, kLeft };
  struct Connection {
    int fd = -1;
    int rank = -1;        // -1 until a HELLO that was accepted
    int watch_rank = -1;  // the rank whose liveness connection this is (WATCH)
    bool lane = false;    // a further request connection of `rank` (LANE)
    std::string inbox;
    std::string outbox;
    bool pending = false;  // a HELLO/GET/BARRIER/GATHER waits for its answer
    Message request;       // that request
    bool close_after_flush = false;
    bool closed = false;
  };

  RendezvousServer(int listen_fd, Config config);
  void Serve();
  void AcceptAll();
  /// Drops the oldest unidentified connections beyond kMaxPendingConnections.
  void CapPending();
  void ReadFrom(Connection& conn);
  /// Takes and handles every complete frame in `conn.inbox`.
  void HandleInbox(Connection& conn);
  void Handle(Connection& conn, Message message);
  void HandleHello(Connection& conn, const Message& hello);
  /// A rank of a completed join that has not left: what WATCH and LANE may name.
  bool IsJoinedRank(uint32_t rank) const;
  void HandleWatch(Connection& conn, const Message& watch);
  void HandleLane(Connection& conn, const Message& lane);
  void HandleGather(Connection& conn, Message gather);
  /// JOB_MISMATCH to a connection of another job, which is then dropped.
  void TurnAway(Connection& conn, uint32_t rank);
  /// Departs every watched rank silent for the heartbeat.
  void CheckSilence();
  void Reply(Connection& conn, const Message& reply);
  void ReplyError(Connection& conn, const Status& status);
  void FailJoin(const Status& status, bool notify_absent);
  /// PROTOCOL_ERROR reply, then the connection closes; a rank on it has left.
  void Reject(Connection& conn, const std::string& detail);
  /// The rank on `conn` (if any, still joined, and not on a lane) has left: Depart.
  void MarkLeft(Connection& conn, const std::string& why);
  /// Records the first departure and fails every pending wait with it.
  void Depart(int rank, const std::string& why);
  /// Records `status` as the job's failure (unless one came first) and fails every pending wait with it.
  void FailAll(const Status& status);
  /// accept() found no descriptor (EMFILE/ENFILE): back off, and fail the job once it lasts.
  void OutOfDescriptors(int error);
  /// Milliseconds until the listen socket is polled again; 0 when it is polled now.
  int AcceptBackoffLeftMs() const;
  void Flush(Connection& conn);
  void CloseConnection(Connection& conn);
  bool AllLeftLocked() const;

  const int world_size_;
  const std::string job_id_;
  const std::string plan_fingerprint_;
  const std::chrono::milliseconds heartbeat_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread thread_;

  mutable std::mutex mu_;  // guards everything below; held while handling events
  std::condition_variable done_cv_;
  bool stop_requested_ = false;
  bool done_ = false;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<RankState> rank_state_;
  bool join_done_ = false;
  Status join_failure_;
  bool wait_for_absent_ = false;
  Status departure_;  // PEER_LOST of the first rank that left or dropped, or RESOURCE_EXHAUSTED
  // Descriptor shortage at accept() (OutOfDescriptors): consecutive failures,
  // and when the listen socket is polled again.
  int accept_failures_ = 0;
  std::chrono::steady_clock::time_point accept_resume_{};
  std::map<std::string, std::string, std::less<>> values_;
  std::map<std::string, std::set<int>, std::less<>> barrier_arrivals_;
  // Per open gather round: the value of each rank that gave one, by rank.
  std::map<std::string, std::map<int, std::string>, std::less<>> gather_rounds_;
  SilenceTracker silence_;  // used by the serving thread only
};

}  // namespace dmlp
