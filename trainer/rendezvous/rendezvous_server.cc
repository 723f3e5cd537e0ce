#include "trainer/rendezvous/rendezvous_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/errno_error.h"
#include "common/file_util.h"
#include "common/rank_place.h"
#include "common/thread_start.h"

namespace dmlp {

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::Start(const std::string& address, int port,
                                                                  Config config) {
  const std::string where = FormatHostPort(address, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) return Status::Error("COORDINATOR_ADDRESS_INVALID", address + ": " + gai_strerror(rc));
  int listen_fd = -1;
  int bind_errno = 0;
  bool in_use = false;
  for (addrinfo* ai = found; ai != nullptr && listen_fd < 0; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      bind_errno = errno;
      continue;
    }
    // SO_REUSEADDR lets a new job bind while the last one's connections sit in
    // TIME_WAIT; Linux still refuses a port that another socket listens on.
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) {
      listen_fd = fd;
      break;
    }
    bind_errno = errno;
    in_use = in_use || errno == EADDRINUSE;
    close(fd);
  }
  freeaddrinfo(found);
  if (listen_fd < 0) {
    if (in_use) return Status::Error("COORDINATOR_PORT_IN_USE", where);
    return ErrnoError("COORDINATOR_BIND_FAILED", where, bind_errno);
  }
  std::unique_ptr<RendezvousServer> server(new RendezvousServer(listen_fd, std::move(config)));
  if (pipe2(server->wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return ErrnoError("COORDINATOR_BIND_FAILED", where + ": pipe");
  }
  DMLP_ASSIGN_OR_RETURN(server->thread_,
                        StartThread("coordinator " + where, [raw = server.get()] { raw->Serve(); }));
  return server;
}

RendezvousServer::RendezvousServer(int listen_fd, Config config)
    : world_size_(config.world_size),
      job_id_(std::move(config.job_id)),
      plan_fingerprint_(std::move(config.plan_fingerprint)),
      heartbeat_(config.heartbeat),
      listen_fd_(listen_fd),
      rank_state_(static_cast<size_t>(config.world_size), RankState::kAbsent),
      silence_(config.world_size, config.heartbeat,
               config.clock != nullptr ? *config.clock : SteadyWaitClock()) {}

RendezvousServer::~RendezvousServer() {
  Stop();
  if (listen_fd_ >= 0) close(listen_fd_);
  for (int fd : wake_pipe_) {
    if (fd >= 0) close(fd);
  }
}

void RendezvousServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
  }
  if (wake_pipe_[1] >= 0) {
    char byte = 0;
    while (write(wake_pipe_[1], &byte, 1) < 0 && errno == EINTR) {
    }
  }
  if (thread_.joinable()) thread_.join();
}

Status RendezvousServer::WaitUntilAllLeft(std::chrono::milliseconds budget, WaitClock& clock) {
  PeerWait wait(budget, clock);
  std::vector<int> stuck;
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_ && !wait.Expired()) {
      done_cv_.wait_for(lock, std::chrono::milliseconds(wait.BeginSlice()));
      wait.EndSlice();
    }
    for (int rank = 0; rank < world_size_ && !done_; ++rank) {
      if (rank_state_[rank] == RankState::kJoined) stuck.push_back(rank);
    }
  }
  Stop();
  if (stuck.empty()) return Status::Ok();
  std::string ranks;
  for (int rank : stuck) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
  return Status::Error("RENDEZVOUS_TIMEOUT",
                       "rank 0: shutdown: ranks " + ranks + " did not say goodbye within " +
                           std::to_string(budget.count() / 1000) + "s");
}

std::vector<int> RendezvousServer::MissingFromJoin() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> missing;
  for (int rank = 0; rank < world_size_; ++rank) {
    if (rank_state_[rank] == RankState::kAbsent) missing.push_back(rank);
  }
  return missing;
}

std::vector<int> RendezvousServer::MissingFromBarrier(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = barrier_arrivals_.find(name);
  std::vector<int> missing;
  for (int rank = 0; rank < world_size_; ++rank) {
    if (it == barrier_arrivals_.end() || it->second.count(rank) == 0) missing.push_back(rank);
  }
  return missing;
}

std::vector<int> RendezvousServer::MissingFromGather(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = gather_rounds_.find(name);
  std::vector<int> missing;
  for (int rank = 0; rank < world_size_; ++rank) {
    if (it == gather_rounds_.end() || it->second.count(rank) == 0) missing.push_back(rank);
  }
  return missing;
}

bool RendezvousServer::AllLeftLocked() const {
  if (rank_state_[0] != RankState::kLeft) return false;  // rank 0 leaves last or has failed
  for (RankState state : rank_state_) {
    if (state == RankState::kJoined) return false;
    if (state == RankState::kAbsent && wait_for_absent_) return false;
  }
  for (const auto& conn : connections_) {
    if (!conn->outbox.empty()) return false;
  }
  return true;
}

void RendezvousServer::Serve() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    // While backing off (AcceptAll), the listen socket is left out: poll
    // ignores a negative descriptor, and the slice below ends the backoff.
    int backoff_ms = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      backoff_ms = AcceptBackoffLeftMs();
    }
    fds.push_back({backoff_ms > 0 ? -1 : listen_fd_, POLLIN, 0});
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& conn : connections_) {
        short events = static_cast<short>(POLLIN | (conn->outbox.empty() ? 0 : POLLOUT));
        fds.push_back({conn->fd, events, 0});
      }
    }
    // No timeout while no rank is watched: the server only answers and the
    // clients bound their waits. Watched ranks need slices to count silence.
    int slice_ms = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      slice_ms = silence_.BeginSlice();
    }
    if (backoff_ms > 0) slice_ms = slice_ms < 0 ? backoff_ms : std::min(slice_ms, backoff_ms);
    if (poll(fds.data(), fds.size(), slice_ms) < 0 && errno != EINTR) break;
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_requested_) break;
    silence_.EndSlice();
    if (fds[1].revents != 0) AcceptAll();
    for (size_t i = 2; i < fds.size(); ++i) {
      Connection& conn = *connections_[i - 2];
      if (!conn.closed && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) ReadFrom(conn);
    }
    CheckSilence();
    for (auto& conn : connections_) {
      if (!conn->closed) Flush(*conn);
      if (!conn->closed && conn->close_after_flush && conn->outbox.empty()) CloseConnection(*conn);
    }
    std::erase_if(connections_, [](const auto& conn) { return conn->closed; });
    if (AllLeftLocked()) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& conn : connections_) CloseConnection(*conn);
  connections_.clear();
  close(listen_fd_);  // late connection attempts are refused, not left unanswered
  listen_fd_ = -1;
  done_ = true;
  done_cv_.notify_all();
}

void RendezvousServer::AcceptAll() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (IsDescriptorShortage(errno)) OutOfDescriptors(errno);
      return;  // EAGAIN: the next poll says when
    }
    accept_failures_ = 0;
    auto conn = std::make_unique<Connection>();
    conn->fd = fd;
    connections_.push_back(std::move(conn));
    CapPending();
  }
}

int RendezvousServer::AcceptBackoffLeftMs() const {
  if (accept_failures_ == 0) return 0;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(accept_resume_ - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

void RendezvousServer::OutOfDescriptors(int error) {
  // The pending connection stays in the backlog and the listen socket stays
  // readable: retrying at once would spin (15,500 accept4 calls a second were
  // seen). Back off 10 ms, doubling up to kMaxAcceptBackoff, and once the
  // shortage has lasted kAcceptAttempts tries, fail the job saying why; later
  // retries go on at the longest backoff, for the ranks still to be told.
  ++accept_failures_;
  const int doublings = std::min(accept_failures_ - 1, 7);
  accept_resume_ = std::chrono::steady_clock::now() +
                   std::min(kMaxAcceptBackoff, std::chrono::milliseconds(10) * (1 << doublings));
  if (accept_failures_ == kAcceptAttempts)
    FailAll(Status::Error("RESOURCE_EXHAUSTED", "rank 0: the coordinator cannot accept connections: " +
                                                    DescribeDescriptorShortage(error)));
}

void RendezvousServer::ReadFrom(Connection& conn) {
  char chunk[65536];
  bool eof = false;
  // Frames are taken after every chunk, so the inbox never holds more than one
  // frame within its bound plus a chunk; a frame over its bound is refused on
  // its first five bytes.
  while (!conn.close_after_flush && !conn.closed) {
    ssize_t got = recv(conn.fd, chunk, sizeof(chunk), 0);
    if (got > 0) {
      conn.inbox.append(chunk, static_cast<size_t>(got));
      HandleInbox(conn);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    eof = true;  // orderly close, reset or error: the peer is gone either way
    break;
  }
  if (eof) {
    MarkLeft(conn, "connection closed without goodbye");
    CloseConnection(conn);
  }
}

void RendezvousServer::HandleInbox(Connection& conn) {
  FrameLimits limits;
  while (!conn.close_after_flush && !conn.closed) {
    // Only a rank of this job may store values; a stranger is held to control frames.
    limits.value_bytes = conn.rank >= 0 ? MaxValueBytes(world_size_) : 0;
    Result<std::optional<Message>> taken = TakeMessage(conn.inbox, limits);
    if (!taken.ok()) {
      conn.inbox.clear();
      return Reject(conn, taken.status().detail());
    }
    if (!taken.value().has_value()) return;
    Handle(conn, std::move(*taken.value()));
  }
}

void RendezvousServer::Handle(Connection& conn, Message message) {
  if (message.type == MessageType::kBye && conn.rank >= 0) {
    // Also while a request is pending: the client gave up waiting for it (timeout).
    conn.pending = false;
    Reply(conn, Message{MessageType::kByeAck});
    conn.close_after_flush = true;
    return MarkLeft(conn, "left the rendezvous");
  }
  if (conn.pending) return Reject(conn, "request while another is pending");
  if (message.type == MessageType::kHello) return HandleHello(conn, message);
  if (message.type == MessageType::kWatch) return HandleWatch(conn, message);
  if (message.type == MessageType::kLane) return HandleLane(conn, message);
  if (message.type == MessageType::kPing && conn.watch_rank >= 0) {
    // Once a rank is lost every rank must stop waiting: the answer says why.
    if (!departure_.ok()) return ReplyError(conn, departure_);
    silence_.Heard(conn.watch_rank);
    return Reply(conn, Message{MessageType::kPong});
  }
  if (conn.rank < 0) return Reject(conn, "request before HELLO");
  switch (message.type) {
    case MessageType::kSet: {
      for (auto& other : connections_) {
        if (other->pending && other->request.type == MessageType::kGet &&
            other->request.name == message.name) {
          other->pending = false;
          Reply(*other, Message{MessageType::kValue, 0, 0, {}, message.payload});
        }
      }
      values_[message.name] = std::move(message.payload);
      return Reply(conn, Message{MessageType::kOk});
    }
    case MessageType::kGet: {
      auto it = values_.find(message.name);
      if (it != values_.end()) return Reply(conn, Message{MessageType::kValue, 0, 0, {}, it->second});
      if (!departure_.ok()) return ReplyError(conn, departure_);
      conn.pending = true;
      conn.request = std::move(message);
      return;
    }
    case MessageType::kBarrier: {
      if (!departure_.ok()) return ReplyError(conn, departure_);
      std::set<int>& arrived = barrier_arrivals_[message.name];
      arrived.insert(conn.rank);
      conn.pending = true;
      conn.request = message;
      if (static_cast<int>(arrived.size()) < world_size_) return;
      barrier_arrivals_.erase(message.name);
      for (auto& other : connections_) {
        if (other->pending && other->request.type == MessageType::kBarrier &&
            other->request.name == message.name) {
          other->pending = false;
          Reply(*other, Message{MessageType::kOk});
        }
      }
      return;
    }
    case MessageType::kGather:
      return HandleGather(conn, std::move(message));
    default:
      return Reject(conn, "unexpected message from a client");
  }
}

void RendezvousServer::HandleGather(Connection& conn, Message gather) {
  if (!departure_.ok()) return ReplyError(conn, departure_);
  std::map<int, std::string>& round = gather_rounds_[gather.name];
  round[conn.rank] = std::move(gather.payload);
  gather.payload.clear();
  conn.pending = true;
  conn.request = std::move(gather);
  if (static_cast<int>(round.size()) < world_size_) return;
  std::vector<std::string> values;
  for (auto& [rank, value] : round) values.push_back(std::move(value));
  const Message reply{MessageType::kValue, 0, 0, {}, EncodeGathered(values)};
  const std::string name = conn.request.name;
  gather_rounds_.erase(name);  // every rank has its reply: nothing of the round is kept
  for (auto& other : connections_) {
    if (other->pending && other->request.type == MessageType::kGather && other->request.name == name) {
      other->pending = false;
      Reply(*other, reply);
    }
  }
}

void RendezvousServer::HandleHello(Connection& conn, const Message& hello) {
  const int rank = static_cast<int>(hello.rank);
  if (conn.rank >= 0) return Reject(conn, "second HELLO on one connection");
  if (conn.watch_rank >= 0) return Reject(conn, "HELLO on a liveness connection");
  // A rank of another job (same port): before anything else, so it can neither
  // fail this job's join nor learn its plan.
  if (hello.job_id != job_id_) return TurnAway(conn, hello.rank);
  if (join_done_) {
    // Not one of this job's ranks (another job on the same port?): turn it away, keep ours.
    ReplyError(conn, Status::Error("PROTOCOL_ERROR", "rank " + std::to_string(rank) +
                                                         ": rendezvous already complete"));
    conn.close_after_flush = true;
    return;
  }
  conn.pending = true;
  conn.request = hello;
  if (static_cast<int>(hello.world_size) != world_size_) {
    // It has its answer once FailJoin replies; nothing more to wait for from it.
    if (rank >= 0 && rank < world_size_ && rank_state_[rank] == RankState::kAbsent) {
      rank_state_[rank] = RankState::kLeft;
    }
    return FailJoin(Status::Error("PLAN_MISMATCH", "rank " + std::to_string(rank) + ": world size " +
                                                       std::to_string(hello.world_size) + " (rank 0 has " +
                                                       std::to_string(world_size_) + ")"),
                    true);
  }
  if (rank < 0 || rank >= world_size_) {
    return FailJoin(Status::Error("PROTOCOL_ERROR", "rank " + std::to_string(hello.rank) +
                                                        " out of range for world size " +
                                                        std::to_string(world_size_)),
                    true);
  }
  if (rank_state_[rank] != RankState::kAbsent) {
    return FailJoin(Status::Error("PROTOCOL_ERROR", "rank " + std::to_string(rank) + " joined twice"), true);
  }
  conn.rank = rank;
  rank_state_[rank] = RankState::kJoined;
  if (!join_failure_.ok()) return FailJoin(join_failure_, false);
  if (hello.payload != plan_fingerprint_) {
    return FailJoin(Status::Error("PLAN_MISMATCH", "rank " + std::to_string(rank) + ": " +
                                                       DescribePlanDifference(plan_fingerprint_, hello.payload)),
                    true);
  }
  if (!departure_.ok()) return FailJoin(departure_, false);
  if (std::count(rank_state_.begin(), rank_state_.end(), RankState::kJoined) < world_size_) return;
  join_done_ = true;
  for (auto& other : connections_) {
    if (other->pending && other->request.type == MessageType::kHello) {
      other->pending = false;
      Reply(*other, Message{MessageType::kWelcome});
    }
  }
}

void RendezvousServer::FailJoin(const Status& status, bool notify_absent) {
  if (join_failure_.ok()) join_failure_ = status;  // every rank reports the first failure
  wait_for_absent_ = wait_for_absent_ || notify_absent;
  for (auto& conn : connections_) {
    if (conn->pending && conn->request.type == MessageType::kHello) {
      conn->pending = false;
      ReplyError(*conn, join_failure_);
      if (conn->rank < 0) conn->close_after_flush = true;
    }
  }
}

void RendezvousServer::Reject(Connection& conn, const std::string& detail) {
  ReplyError(conn, Status::Error("PROTOCOL_ERROR", detail));
  conn.close_after_flush = true;
  MarkLeft(conn, "protocol error: " + detail);
}

void RendezvousServer::MarkLeft(Connection& conn, const std::string& why) {
  // A lane closes before its rank has said why it fails (trainer.cc): the
  // rank's first connection and its liveness decide whether it left.
  if (conn.lane || conn.rank < 0 || rank_state_[conn.rank] != RankState::kJoined) return;
  rank_state_[conn.rank] = RankState::kLeft;
  silence_.Forget(conn.rank);
  Depart(conn.rank, why);
}

void RendezvousServer::Depart(int rank, const std::string& why) {
  FailAll(Status::Error("PEER_LOST", "rank " + std::to_string(rank) + ": " + why));
}

void RendezvousServer::FailAll(const Status& status) {
  if (departure_.ok()) departure_ = status;
  if (!join_done_) return FailJoin(departure_, false);
  barrier_arrivals_.clear();
  gather_rounds_.clear();
  for (auto& conn : connections_) {
    if (conn->pending) {
      conn->pending = false;
      ReplyError(*conn, departure_);
    }
  }
}

void RendezvousServer::Reply(Connection& conn, const Message& reply) {
  conn.outbox += EncodeMessage(reply);
}

void RendezvousServer::ReplyError(Connection& conn, const Status& status) {
  Reply(conn, Message{MessageType::kError, 0, 0, status.code(), status.detail()});
}

void RendezvousServer::Flush(Connection& conn) {
  while (!conn.outbox.empty()) {
    ssize_t written = send(conn.fd, conn.outbox.data(), conn.outbox.size(), MSG_NOSIGNAL);
    if (written > 0) {
      conn.outbox.erase(0, static_cast<size_t>(written));
    } else if (written < 0 && errno == EINTR) {
      continue;
    } else if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;  // POLLOUT resumes it
    } else {
      conn.outbox.clear();  // peer gone; its EOF is handled on read
      return;
    }
  }
}

void RendezvousServer::CloseConnection(Connection& conn) {
  if (conn.closed) return;
  // A closed liveness connection says nothing: its rank's main connection decides.
  if (conn.watch_rank >= 0) silence_.Forget(conn.watch_rank);
  close(conn.fd);
  conn.closed = true;
  conn.outbox.clear();
}

}  // namespace dmlp
