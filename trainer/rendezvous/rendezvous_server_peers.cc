// The coordinator's admission of connections and its liveness count: who may
// stay (strangers are capped and turned away) and who is lost (silent). Part
// of RendezvousServer (rendezvous_server.h); split from rendezvous_server.cc
// to keep each file one concern.
#include "common/format/error_codes.h"
#include "trainer/rendezvous/rendezvous_server.h"

namespace dmlp {

void RendezvousServer::CapPending() {
  size_t pending = 0;
  for (auto it = connections_.rbegin(); it != connections_.rend(); ++it) {
    Connection& conn = **it;
    if (conn.closed || conn.rank >= 0 || conn.watch_rank >= 0) continue;
    // Newest first, so the oldest are the ones dropped: a rank says HELLO as
    // soon as it connects, so only idle strangers grow old unidentified.
    if (++pending > kMaxPendingConnections) CloseConnection(conn);
  }
}

void RendezvousServer::TurnAway(Connection& conn, uint32_t rank) {
  // Says only that the job differs: neither this job's id nor its plan.
  ReplyError(conn, Status::Error(kJobMismatch, "rank " + std::to_string(rank) +
                                                     ": the coordinator serves another job"));
  conn.close_after_flush = true;
}

bool RendezvousServer::IsJoinedRank(uint32_t rank) const {
  return join_done_ && rank < static_cast<uint32_t>(world_size_) && rank_state_[rank] == RankState::kJoined;
}

void RendezvousServer::HandleWatch(Connection& conn, const Message& watch) {
  if (conn.rank >= 0 || conn.watch_rank >= 0) return Reject(conn, "WATCH on an identified connection");
  if (watch.job_id != job_id_) return TurnAway(conn, watch.rank);
  if (!IsJoinedRank(watch.rank)) {
    return Reject(conn, "WATCH from rank " + std::to_string(watch.rank) + ", which is not a joined rank");
  }
  conn.watch_rank = static_cast<int>(watch.rank);
  silence_.Heard(conn.watch_rank);
}

void RendezvousServer::HandleLane(Connection& conn, const Message& lane) {
  if (conn.rank >= 0 || conn.watch_rank >= 0) return Reject(conn, "LANE on an identified connection");
  if (lane.job_id != job_id_) return TurnAway(conn, lane.rank);
  if (!IsJoinedRank(lane.rank)) {
    return Reject(conn, "LANE from rank " + std::to_string(lane.rank) + ", which is not a joined rank");
  }
  conn.rank = static_cast<int>(lane.rank);
  conn.lane = true;
  Reply(conn, Message{MessageType::kOk});
}

void RendezvousServer::CheckSilence() {
  for (int rank = silence_.FirstSilent(); rank >= 0; rank = silence_.FirstSilent()) {
    silence_.Forget(rank);
    if (rank_state_[rank] != RankState::kJoined) continue;
    // Still joined: the server keeps serving, so every rank's next ping
    // learns why, rather than finding the coordinator gone.
    Depart(rank, "silent for " + std::to_string(heartbeat_.count() / 1000) +
                     "s (HEARTBEAT_TIMEOUT_SECONDS) while rank 0 kept running");
    // Told on every liveness connection now, not at each rank's next ping:
    // rank 0 stops soon after it learns of the loss, and a rank whose next
    // ping finds the coordinator gone could only say that, not which host was
    // lost (seen across hosts, tests/e2e/cluster). The monitors read it at once.
    for (auto& conn : connections_) {
      if (conn->watch_rank >= 0 && !conn->closed) ReplyError(*conn, departure_);
    }
  }
}

}  // namespace dmlp
