#include "trainer/rendezvous/rendezvous.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/file_util.h"
#include "common/format/error_codes.h"
#include "common/rank_place.h"
#include "trainer/rendezvous/rendezvous_server.h"
#include "trainer/rendezvous/rendezvous_wire.h"

namespace dmlp {
namespace {

std::string JoinRanks(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ",") + std::to_string(rank);
  return text;
}

// One non-blocking connect attempt to `ai`, waiting in `wait`'s slices.
// Returns the connected socket, or -1 with `error` set (and `no_descriptor`
// when there was no descriptor for a socket: retrying would not help).
int TryConnect(const addrinfo& ai, PeerWait& wait, std::string* error, bool* no_descriptor) {
  int fd = socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) {
    *no_descriptor = IsDescriptorShortage(errno);
    *error = "socket: " + (*no_descriptor ? DescribeDescriptorShortage(errno) : std::strerror(errno));
    return -1;
  }
  int rc = connect(fd, ai.ai_addr, ai.ai_addrlen);
  if (rc != 0 && errno != EINPROGRESS && errno != EINTR) {
    *error = std::strerror(errno);
    close(fd);
    return -1;
  }
  while (rc != 0) {
    pollfd entry{fd, POLLOUT, 0};
    int ready = poll(&entry, 1, wait.BeginSlice());
    wait.EndSlice();
    if (ready > 0) {
      int so_error = 0;
      socklen_t length = sizeof(so_error);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length);
      if (so_error != 0) {
        *error = std::strerror(so_error);
        close(fd);
        return -1;
      }
      break;
    }
    if (wait.Expired()) {
      *error = "connect did not complete";
      close(fd);
      return -1;
    }
  }
  int on = 1;  // requests and replies are small; do not let Nagle hold them back
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
  return fd;
}

std::string LocalAddressOf(int fd) {
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) return {};
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&local), length, host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return {};
  }
  return host;
}

}  // namespace

Rendezvous::Rendezvous(const RendezvousOptions& options) : options_(options) {}

Rendezvous::~Rendezvous() {
  (void)Close();
  if (parent_ != nullptr) parent_->ForgetLane(this);
}

WaitClock& Rendezvous::clock() const {
  return options_.clock != nullptr ? *options_.clock : SteadyWaitClock();
}

std::chrono::milliseconds Rendezvous::heartbeat_timeout() const {
  return std::chrono::seconds(options_.heartbeat_timeout_seconds);
}

std::string Rendezvous::Where() const { return FormatHostPort(options_.address, options_.port); }

Result<std::unique_ptr<Rendezvous>> Rendezvous::Join(const RendezvousOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size ||
      options.port < 1 || options.port > 65535 || options.heartbeat_timeout_seconds < 1) {
    return Status::Error(kRendezvousOptionsInvalid,
                         "rank " + std::to_string(options.rank) + " of " +
                             std::to_string(options.world_size) + ", port " + std::to_string(options.port) +
                             ", heartbeat " + std::to_string(options.heartbeat_timeout_seconds) + "s");
  }
  std::unique_ptr<Rendezvous> rendezvous(new Rendezvous(options));
  if (options.rank == 0) {
    RendezvousServer::Config config;
    config.world_size = options.world_size;
    config.job_id = options.job_id;
    config.plan_fingerprint = options.plan_fingerprint;
    config.heartbeat = rendezvous->heartbeat_timeout();
    config.clock = options.clock;
    DMLP_ASSIGN_OR_RETURN(rendezvous->server_,
                          RendezvousServer::Start(options.address, options.port, std::move(config)));
  }
  DMLP_RETURN_IF_ERROR(rendezvous->Connect());
  // On failure the destructor says goodbye; rank 0's then keeps the coordinator
  // up until the other ranks have seen the same failure.
  DMLP_RETURN_IF_ERROR(rendezvous->SendHello());
  return rendezvous;
}

Result<int> Rendezvous::Dial(PeerWait& wait, std::string* last_error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  while (!wait.Expired()) {
    addrinfo* found = nullptr;
    int rc = getaddrinfo(options_.address.c_str(), std::to_string(options_.port).c_str(), &hints, &found);
    if (rc == EAI_NONAME || rc == EAI_SERVICE || rc == EAI_FAMILY) {
      return Status::Error(kCoordinatorAddressInvalid, options_.address + ": " + gai_strerror(rc));
    }
    if (rc != 0) *last_error = gai_strerror(rc);  // EAI_AGAIN and friends: retry
    int fd = -1;
    bool no_descriptor = false;
    for (addrinfo* ai = found; ai != nullptr && fd < 0 && !no_descriptor; ai = ai->ai_next) {
      fd = TryConnect(*ai, wait, last_error, &no_descriptor);
    }
    if (found != nullptr) freeaddrinfo(found);
    if (fd >= 0) return fd;
    if (no_descriptor)
      return Status::Error(kResourceExhausted, "rank " + std::to_string(rank()) + ": cannot reach the coordinator at " +
                                                     Where() + ": " + *last_error);
    wait.SleepSlice(std::chrono::milliseconds(100));  // the coordinator may not be up yet
  }
  return -1;
}

Status Rendezvous::Connect() {
  PeerWait wait(heartbeat_timeout(), clock());
  std::string last_error = "no attempt";
  DMLP_ASSIGN_OR_RETURN(fd_, Dial(wait, &last_error));
  if (fd_ >= 0) {
    live_fd_ = fd_;
    local_address_ = LocalAddressOf(fd_);
    return Status::Ok();
  }
  return Status::Error(kRendezvousTimeout, "rank " + std::to_string(rank()) + ": no coordinator at " +
                                                 Where() + " within " +
                                                 std::to_string(options_.heartbeat_timeout_seconds) +
                                                 "s (last error: " + last_error + ")");
}

Status Rendezvous::SendHello() {
  Message hello{MessageType::kHello, static_cast<uint32_t>(rank()), static_cast<uint32_t>(world_size()), {},
                options_.plan_fingerprint, options_.job_id};
  std::function<std::vector<int>()> missing;
  if (server_) missing = [this] { return server_->MissingFromJoin(); };
  Result<Message> reply =
      Call(hello, "all " + std::to_string(world_size()) + " ranks to join at " + Where(), missing);
  if (!reply.ok() && reply.status().code() == kJobMismatch) {
    broken_ = Status::Error(kJobMismatch, "rank " + std::to_string(rank()) + ": the coordinator at " +
                                                Where() + " serves another job (two jobs need two ports)");
    return broken_;
  }
  if (!reply.ok()) return reply.status();
  if (reply->type != MessageType::kWelcome) {
    return Broken(Status::Error(kProtocolError, "unexpected reply to HELLO"));
  }
  return Status::Ok();
}

Status Rendezvous::Broken(Status status) {
  if (broken_.ok()) broken_ = status;
  return status;
}

Result<Message> Rendezvous::Call(const Message& request, const std::string& awaited,
                                 const std::function<std::vector<int>()>& missing) {
  if (!broken_.ok()) return broken_;
  if (closed_ || fd_ < 0) return Status::Error(kRendezvousClosed, "rank " + std::to_string(rank()));
  PeerWait wait(heartbeat_timeout(), clock());
  Status sent = SendAll(fd_, EncodeMessage(request), wait);
  FrameLimits limits;
  limits.value_bytes = MaxValueBytes(world_size());
  Result<Message> reply = sent.ok() ? ReceiveMessage(fd_, wait, limits) : Result<Message>(sent);
  if (reply.ok()) {
    if (reply->type == MessageType::kError) return Broken(Status::Error(reply->name, reply->payload));
    return reply;
  }
  const Status& failure = reply.status();
  const std::string who = "rank " + std::to_string(rank()) + ": ";
  if (failure.code() == kRendezvousTimeout) {
    std::string text = who + "waited " + std::to_string(options_.heartbeat_timeout_seconds) + "s for " + awaited;
    if (missing) text += " (missing ranks " + JoinRanks(missing()) + ")";
    return Broken(Status::Error(kRendezvousTimeout, text));
  }
  if (failure.code() == kConnectionClosed) {
    return Broken(Status::Error(kPeerLost, "rank 0: coordinator at " + Where() +
                                                 " closed the connection (seen by rank " +
                                                 std::to_string(rank()) + ")"));
  }
  return Broken(failure.WithContext(who + awaited));
}

Status Rendezvous::Set(std::string_view key, std::string_view value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (key.size() > kMaxNameBytes || value.size() > MaxValueBytes(world_size())) {
    return Status::Error(kInvalidArgument, "rendezvous key or value too large");
  }
  Result<Message> reply = Call(Message{MessageType::kSet, 0, 0, std::string(key), std::string(value)},
                               "the coordinator to store '" + std::string(key) + "'");
  if (!reply.ok()) return reply.status();
  if (reply->type != MessageType::kOk) return Broken(Status::Error(kProtocolError, "unexpected reply to SET"));
  return Status::Ok();
}

Result<std::string> Rendezvous::Get(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (key.size() > kMaxNameBytes) return Status::Error(kInvalidArgument, "rendezvous key too large");
  Result<Message> reply =
      Call(Message{MessageType::kGet, 0, 0, std::string(key), {}}, "key '" + std::string(key) + "'");
  if (!reply.ok()) return reply.status();
  if (reply->type != MessageType::kValue) {
    return Broken(Status::Error(kProtocolError, "unexpected reply to GET"));
  }
  return std::move(reply->payload);
}

Status Rendezvous::Barrier(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (name.size() > kMaxNameBytes) return Status::Error(kInvalidArgument, "barrier name too large");
  std::function<std::vector<int>()> missing;
  std::string barrier(name);
  if (server_) missing = [this, barrier] { return server_->MissingFromBarrier(barrier); };
  Result<Message> reply =
      Call(Message{MessageType::kBarrier, 0, 0, barrier, {}}, "barrier '" + barrier + "'", missing);
  if (!reply.ok()) return reply.status();
  if (reply->type != MessageType::kOk) {
    return Broken(Status::Error(kProtocolError, "unexpected reply to BARRIER"));
  }
  return Status::Ok();
}

Result<std::vector<std::string>> Rendezvous::AllGather(std::string_view name, std::string_view value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (name.size() > kMaxNameBytes || value.size() > kMaxGatherValueBytes)
    return Status::Error(kInvalidArgument, "gather name or value too large");
  std::function<std::vector<int>()> missing;
  std::string gather(name);
  if (server_) missing = [this, gather] { return server_->MissingFromGather(gather); };
  Result<Message> reply = Call(Message{MessageType::kGather, 0, 0, gather, std::string(value)},
                               "gather '" + gather + "'", missing);
  if (!reply.ok()) return reply.status();
  if (reply->type != MessageType::kValue)
    return Broken(Status::Error(kProtocolError, "unexpected reply to GATHER"));
  Result<std::vector<std::string>> values = DecodeGathered(reply->payload, world_size());
  if (!values.ok()) return Broken(values.status());
  return values;
}

Status Rendezvous::StartPeerMonitor() {
  std::lock_guard<std::mutex> lock(mu_);
  if (monitor_) return Status::Ok();
  PeerWait wait(heartbeat_timeout(), clock());
  std::string last_error = "no attempt";
  DMLP_ASSIGN_OR_RETURN(const int fd, Dial(wait, &last_error));
  if (fd < 0) {
    return Status::Error(kPeerLost, "rank 0: no coordinator at " + Where() + " for the liveness connection of rank " +
                                          std::to_string(rank()) + " (last error: " + last_error + ")");
  }
  DMLP_ASSIGN_OR_RETURN(monitor_, PeerMonitor::Start(fd, rank(), options_.job_id, heartbeat_timeout(),
                                                     peer_loss_, clock()));
  // A lost peer ends every wait on the rendezvous too (rank 0: the others see PEER_LOST).
  peer_loss_->AddHook([this] { Abandon(); });
  return Status::Ok();
}

void Rendezvous::StopPeerMonitor() {
  std::unique_ptr<PeerMonitor> monitor;
  {
    std::lock_guard<std::mutex> lock(mu_);
    monitor = std::move(monitor_);
  }
  if (monitor) monitor->Stop();
}

void Rendezvous::Abandon() {
  abandoned_ = true;
  const int fd = live_fd_.load();
  if (fd >= 0) shutdown(fd, SHUT_RDWR);  // wakes a blocked call; Close() closes the fd
  std::lock_guard<std::mutex> lock(lanes_mu_);
  for (Rendezvous* lane : lanes_) lane->Abandon();
}

Status Rendezvous::Close() {
  StopPeerMonitor();  // the end of the job is no loss
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Status::Ok();
  closed_ = true;
  live_fd_ = -1;
  if (abandoned_) {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    server_.reset();
    return Status::Ok();
  }
  Status status;
  const bool connected = fd_ >= 0;
  if (connected) {
    // Say goodbye even when broken, so the coordinator tells the others we left
    // on purpose; skip replies still in flight from a request that timed out.
    PeerWait wait(heartbeat_timeout(), clock());
    status = SendAll(fd_, EncodeMessage(Message{MessageType::kBye}), wait);
    while (status.ok()) {
      Result<Message> reply = ReceiveMessage(fd_, wait, FrameLimits{kMaxControlBytes, MaxValueBytes(world_size())});
      if (!reply.ok()) status = reply.status();
      if (reply.ok() && reply->type == MessageType::kByeAck) break;
    }
    close(fd_);
    fd_ = -1;
    if (!status.ok()) {
      status = Status::Error(status.code() == kRendezvousTimeout ? kRendezvousTimeout : kPeerLost,
                             "rank " + std::to_string(rank()) + ": goodbye to the coordinator at " + Where() +
                                 ": " + status.ToString());
    }
  }
  if (server_ && connected) {
    Status shutdown = server_->WaitUntilAllLeft(heartbeat_timeout(), clock());
    if (status.ok()) status = shutdown;
  }
  server_.reset();  // stops it; when rank 0 never connected, the job cannot have joined
  return status;
}

}  // namespace dmlp
