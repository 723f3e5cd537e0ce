#include "trainer/cpu/collectives_gloo.h"

#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <cstdint>
#include <cstring>
#include <exception>

#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/config.h>
#include <gloo/types.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>

#include "common/file_util.h"
#include "common/format/error_codes.h"
#include "trainer/cpu/gloo_store.h"

namespace dmlp {
namespace {

// The element-wise sum Gloo's allreduce applies. Ours rather than gloo::sum so
// that it is compiled with dmlp's flags (no contraction, no fast-math). Gloo's
// ring allreduce reduces each segment on one rank, in ring order, and then
// sends that one result to all, so every rank ends with the same bits.
void SumFloats(void* out, const void* a, const void* b, size_t count) {
  float* sum = static_cast<float*>(out);
  const float* x = static_cast<const float*>(a);
  const float* y = static_cast<const float*>(b);
  for (size_t i = 0; i < count; ++i) sum[i] = x[i] + y[i];
}

// Gloo's TCP transport writes with writev(), without MSG_NOSIGNAL, so a peer
// that dies mid-collective would kill this rank with SIGPIPE instead of failing
// the operation with EPIPE (seen in collectives_gloo_test, about 1 run in 20).
// Ignoring SIGPIPE turns it into COLLECTIVE_ERROR. Process-wide by necessity;
// left alone when the program installed its own handler.
void IgnoreSigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
}

// The connected TCP sockets of this process whose local port is not `skip_port`
// (the coordinator's: rank 0's server accepts on it). Sorted.
std::vector<int> ConnectedSockets(int skip_port) {
  std::vector<int> sockets;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return sockets;
  const int dir_fd = dirfd(dir);
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dir_fd) continue;
    struct stat info {};
    if (fstat(static_cast<int>(fd), &info) != 0 || !S_ISSOCK(info.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_length = sizeof(local), peer_length = sizeof(peer);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_length) != 0) continue;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) continue;
    int port = -1;
    if (local.ss_family == AF_INET) port = ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
    if (local.ss_family == AF_INET6) port = ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
    if (port < 0 || port == skip_port) continue;
    sockets.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  std::sort(sockets.begin(), sockets.end());
  return sockets;
}

// A connected socket's local and peer addresses, as bytes ("" when `fd` is none).
std::string SocketEnds(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t local_size = sizeof local, peer_size = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) {
    return "";
  }
  return std::string(reinterpret_cast<const char*>(&local), local_size) +
         std::string(reinterpret_cast<const char*>(&peer), peer_size);
}

// Gloo's own collectives use slot prefixes 0x01-0x08 (gloo/types.h); a slot
// keeps this one's messages apart from theirs on the shared pairs.
constexpr uint8_t kAllGatherSlotPrefix = 0x40;

}  // namespace

GlooCollectives::GlooCollectives(std::shared_ptr<gloo::Context> context, int rank, int world_size)
    : context_(std::move(context)), rank_(rank), world_size_(world_size) {}

GlooCollectives::~GlooCollectives() {
  if (peer_loss_) peer_loss_->RemoveHook(abort_hook_);  // waits out a running hook
}

Status GlooCollectives::Error(const char* op, const std::string& what) const {
  return Status::Error(kCollectiveError, std::string(op) + ": " + what + " (rank " + std::to_string(rank_) + ")");
}

std::string GlooCollectives::Description() const {
  return "gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
         std::to_string(GLOO_VERSION_PATCH) + " tcp";
}

Result<std::unique_ptr<GlooCollectives>> GlooCollectives::Connect(Rendezvous& rendezvous,
                                                                  const std::string& key_prefix) {
  const int rank = rendezvous.rank();
  const int world_size = rendezvous.world_size();
  auto fail = [rank](const std::string& what) {
    return Status::Error(kCollectiveError, "connect: " + what + " (rank " + std::to_string(rank) + ")");
  };
  if (rendezvous.local_address().empty()) return fail("no local address from the rendezvous");
  IgnoreSigpipe();
  // Every rank alive before any Gloo socket exists. Otherwise a rank that
  // learns of a lost peer first tears down its half-made pairs while another
  // rank's Gloo loop thread is still handshaking on them, and Gloo throws from
  // that thread (getpeername: ENOTCONN), which aborts the process (seen once in
  // CI, collectives_gloo_test). After the barrier, a lost peer is PEER_LOST on
  // every rank, from the rendezvous, before Gloo is involved.
  DMLP_RETURN_IF_ERROR(rendezvous.Barrier(key_prefix + "connect"));
  GlooStore store(rendezvous, key_prefix);
  try {
    gloo::transport::tcp::attr attr;
    // The address this rank reached the coordinator from is one its peers can reach too.
    attr.hostname = rendezvous.local_address();
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
    // While connecting, Gloo's own waits on a pair's TCP handshake use this
    // (wall-clock, 5 x it in Pair::waitUntilConnected); the address exchange
    // itself goes through the store, whose waits are the freeze-tolerant ones.
    context->setTimeout(rendezvous.heartbeat_timeout());
    // Gloo keeps its sockets private; the ones that appear while it connects
    // are its pairs (the coordinator's accepted connections are told apart by port).
    const std::vector<int> before = ConnectedSockets(rendezvous.port());
    context->connectFullMesh(store, device);
    const std::vector<int> after = ConnectedSockets(rendezvous.port());
    // From here on, a frozen peer must not kill the job (see kOperationTimeout).
    context->setTimeout(kOperationTimeout);
    std::unique_ptr<GlooCollectives> collectives(new GlooCollectives(std::move(context), rank, world_size));
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                        std::back_inserter(collectives->pair_sockets_));
    for (int fd : collectives->pair_sockets_) collectives->pair_ends_.push_back(SocketEnds(fd));
    collectives->peer_loss_ = rendezvous.peer_loss();
    collectives->abort_hook_ = collectives->peer_loss_->AddHook([raw = collectives.get()] {
      // Gloo's loop thread then sees the connections end, as when a peer dies,
      // and fails every pending operation; Gloo still owns and closes the fds.
      for (int fd : raw->pair_sockets_) shutdown(fd, SHUT_RDWR);
    });
    return collectives;
  } catch (const std::exception& e) {
    if (!store.error().ok()) return store.error();
    // Gloo names no errno when it runs out of descriptors: its address lookup
    // says "Unable to find address for: 127.0.0.1". If what its mesh needs
    // (a socket per peer, its listener, its epoll) cannot be opened now, that
    // was the cause, and it is the user's limit to raise.
    if (const int error = DescriptorHeadroomError(world_size + 2); IsDescriptorShortage(error)) {
      return Status::Error(kResourceExhausted, "connect: " + DescribeDescriptorShortage(error) +
                                                     "; Gloo says: " + e.what() + " (rank " +
                                                     std::to_string(rank) + ")");
    }
    return fail(e.what());
  }
}

Status GlooCollectives::AllToAll(const float* send, float* recv, size_t count_per_peer) {
  if (count_per_peer == 0) return Status::Ok();
  if (count_per_peer > SIZE_MAX / sizeof(float) / static_cast<size_t>(world_size_)) {
    return Error("alltoall", "count overflows");
  }
  const size_t total = count_per_peer * static_cast<size_t>(world_size_);
  try {
    gloo::AlltoallOptions options(context_);
    options.setInput(const_cast<float*>(send), total);  // only read; Gloo's buffers are untyped
    options.setOutput(recv, total);
    options.setTimeout(kOperationTimeout);
    gloo::alltoall(options);
  } catch (const std::exception& e) {
    return Error("alltoall", e.what());
  }
  return Status::Ok();
}

// Not gloo::allgather: that one walks a ring in half-blocks and waits for each
// transfer before the next. Two ranks on the development machine, 5.3 MB each
// way, timed in the same loop: gloo::allgather 4.9-5.4 ms, this 3.3-4.4 ms.
// This posts every send and receive at once, as gloo::alltoall does, over the
// same Gloo TCP pairs; it only moves bytes, so the schedule cannot change a bit.
// In place (send == recv + rank * count) skips the local copy.
Status GlooCollectives::AllGather(const float* send, float* recv, size_t count_per_rank) {
  if (count_per_rank == 0) return Status::Ok();
  if (count_per_rank > SIZE_MAX / sizeof(float) / static_cast<size_t>(world_size_)) {
    return Error("allgather", "count overflows");
  }
  const size_t bytes = count_per_rank * sizeof(float);
  float* own = recv + static_cast<size_t>(rank_) * count_per_rank;
  if (send != own) std::memcpy(own, send, bytes);
  if (world_size_ == 1) return Status::Ok();
  try {
    const auto slot = gloo::Slot::build(kAllGatherSlotPrefix, 0);
    auto outgoing = context_->createUnboundBuffer(own, bytes);
    auto incoming = context_->createUnboundBuffer(recv, bytes * static_cast<size_t>(world_size_));
    for (int step = 1; step < world_size_; ++step) {
      const int to = (rank_ + step) % world_size_;
      const int from = (rank_ + world_size_ - step) % world_size_;
      outgoing->send(to, slot, 0, bytes);
      incoming->recv(from, slot, static_cast<size_t>(from) * bytes, bytes);
    }
    for (int step = 1; step < world_size_; ++step) {
      outgoing->waitSend(kOperationTimeout);
      incoming->waitRecv(kOperationTimeout);
    }
  } catch (const std::exception& e) {
    return Error("allgather", e.what());
  }
  return Status::Ok();
}

Status GlooCollectives::AllReduceSum(float* data, size_t count) {
  if (count == 0) return Status::Ok();
  try {
    gloo::AllreduceOptions options(context_);
    options.setOutput(data, count);  // no input: in place
    options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    options.setReduceFunction(&SumFloats);
    options.setTimeout(kOperationTimeout);
    gloo::allreduce(options);
  } catch (const std::exception& e) {
    return Error("allreduce", e.what());
  }
  return Status::Ok();
}

bool GlooCollectives::ConnectionsIntact() const {
  std::vector<pollfd> polled;
  for (size_t i = 0; i < pair_sockets_.size(); ++i) {
    if (SocketEnds(pair_sockets_[i]) != pair_ends_[i]) return false;  // Gloo closed it
    polled.push_back({pair_sockets_[i], POLLRDHUP, 0});
  }
  if (polled.empty()) return true;
  if (poll(polled.data(), polled.size(), 0) < 0) return true;  // EINTR: ask again at the next slice
  for (const pollfd& p : polled) {
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return false;
  }
  return true;
}

Status GlooCollectives::Barrier() {
  try {
    gloo::BarrierOptions options(context_);
    options.setTimeout(kOperationTimeout);
    gloo::barrier(options);
  } catch (const std::exception& e) {
    return Error("barrier", e.what());
  }
  return Status::Ok();
}

}  // namespace dmlp
