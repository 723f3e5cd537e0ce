#include "trainer/cpu/collectives_shm.h"

#include <fcntl.h>
#include <immintrin.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "common/errno_error.h"
#include "common/file_util.h"
#include "trainer/cpu/collectives_gloo.h"
#include "trainer/cpu/slice_checksum.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {
namespace {

constexpr uint64_t kMagic = 0x646d6c7073686d31;  // "dmlpshm1"
constexpr size_t kLine = 64;                     // one header line per rank: no false sharing
constexpr size_t kCapacityGrain = size_t{1} << 20;
constexpr int kSpinsBeforeSleep = 4000;          // about 20 us of pause on current x86-64

struct Header {
  uint64_t magic;
  uint32_t world_size;
};


size_t PageRound(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// The header: its line, one line per rank, then the checksum table.
size_t HeaderBytes(int world_size, size_t checksums) {
  return PageRound(kLine * (1 + static_cast<size_t>(world_size)) + checksums * sizeof(uint64_t));
}

size_t RoundUpToGrain(size_t bytes) { return (bytes + kCapacityGrain - 1) / kCapacityGrain * kCapacityGrain; }

std::string NamespaceInode(const char* name) {
  struct stat info {};
  if (stat((std::string("/proc/self/ns/") + name).c_str(), &info) != 0) return "?";
  return std::to_string(info.st_ino);
}

// Whether operation `reached` is at or past `wanted`, counting modulo 2^32.
bool AtOrPast(uint32_t reached, uint32_t wanted) { return static_cast<int32_t>(reached - wanted) >= 0; }

void FutexWait(std::atomic<uint32_t>* word, uint32_t seen, std::chrono::milliseconds slice) {
  const timespec timeout{0, static_cast<long>(std::chrono::nanoseconds(slice).count())};
  // Not FUTEX_PRIVATE_FLAG: the word is shared between processes. EINTR,
  // EAGAIN (the word moved on) and ETIMEDOUT all just mean "look again".
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &timeout, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

Status ConnectError(int rank, const std::string& what) {
  return Status::Error("COLLECTIVE_ERROR", "connect: " + what + " (rank " + std::to_string(rank) + ")");
}

// Waits until process `pid` has exited, at most `bound`. Nothing to wait for
// when it is this process (ranks as threads, in tests) or already gone.
void AwaitExit(pid_t pid, std::chrono::milliseconds bound) {
  if (pid == getpid()) return;
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return;
  pollfd exited{fd, POLLIN, 0};  // readable once the process has exited (a zombie counts)
  poll(&exited, 1, static_cast<int>(bound.count()));
  close(fd);
}

}  // namespace

// A rank's line of the header: the operations it has published (its futex word).
struct SharedMemoryCollectives::Slot {
  std::atomic<uint32_t> published;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "a futex word shared between processes");
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

std::string LocalHostIdentity() {
  Result<std::string> boot = ReadFileToString("/proc/sys/kernel/random/boot_id");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string boot_id = boot.ok() ? *boot : "?";
  while (!boot_id.empty() && boot_id.back() == '\n') boot_id.pop_back();
  return "boot " + boot_id + " host " + host + " pid-ns " + NamespaceInode("pid") + " ipc-ns " +
         NamespaceInode("ipc");
}

SharedMemoryCollectives::SharedMemoryCollectives(std::unique_ptr<GlooCollectives> gloo,
                                                 std::shared_ptr<PeerLoss> peer_loss, int rank,
                                                 int world_size)
    : gloo_(std::move(gloo)), peer_loss_(std::move(peer_loss)), rank_(rank), world_size_(world_size) {}

SharedMemoryCollectives::~SharedMemoryCollectives() {
  if (outboxes_ != nullptr) munmap(outboxes_, OutboxesBytes(capacity_));
  if (base_ != nullptr) munmap(base_, fixed_bytes_);
  if (fd_ >= 0) close(fd_);
}

std::string SharedMemoryCollectives::Description() const { return gloo_->Description(); }

Status SharedMemoryCollectives::Attach(int owner_pid, int owner_fd, const SharedSizes& sizes) {
  const size_t capacity = RoundUpToGrain(sizes.outbox_bytes);
  partial_floats_ = sizes.partial_floats;
  reduced_floats_ = sizes.reduced_floats;
  slice_floats_ = sizes.slice_floats;
  const size_t area_floats = static_cast<size_t>(world_size_) * partial_floats_ + reduced_floats_;
  area_slices_ = slice_floats_ == 0 ? 0 : area_floats / slice_floats_;
  header_bytes_ = HeaderBytes(world_size_, area_slices_ + 2 * static_cast<size_t>(world_size_) * world_size_);
  fixed_bytes_ = header_bytes_ + PageRound(area_floats * sizeof(float));
  if (rank_ == 0) {
    fd_ = static_cast<int>(syscall(SYS_memfd_create, "dmlp-collectives", MFD_CLOEXEC));
    if (fd_ < 0) return ErrnoError("COLLECTIVE_ERROR", "memfd_create");
    DMLP_RETURN_IF_ERROR(Resize(capacity));
  } else {
    const std::string path = "/proc/" + std::to_string(owner_pid) + "/fd/" + std::to_string(owner_fd);
    fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) return ErrnoError("COLLECTIVE_ERROR", "open " + path);
  }
  // The header and the reduction area: mapped once, so Partials() and
  // Reduced() stay put when the outboxes grow.
  void* fixed = mmap(nullptr, fixed_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (fixed == MAP_FAILED) return ErrnoError("COLLECTIVE_ERROR", "mmap");
  base_ = static_cast<uint8_t*>(fixed);
  DMLP_RETURN_IF_ERROR(MapOutboxes(capacity));
  // The pages now, so that a machine without the memory says so here, not
  // with SIGBUS in the middle of a step (a memfd's pages are allocated on use).
  const size_t total = fixed_bytes_ + OutboxesBytes(capacity);
  if (rank_ == 0 && fallocate(fd_, 0, 0, static_cast<off_t>(total)) != 0 && errno != EOPNOTSUPP)
    return ErrnoError("COLLECTIVE_ERROR", "fallocate of " + std::to_string(total) + " bytes of shared memory");
  auto* header = reinterpret_cast<Header*>(base_);
  if (rank_ == 0) {
    header->world_size = static_cast<uint32_t>(world_size_);
    header->magic = kMagic;
  } else if (header->magic != kMagic || header->world_size != static_cast<uint32_t>(world_size_)) {
    return Status::Error("COLLECTIVE_ERROR", "the segment opened is not this job's");
  }
  return Status::Ok();
}

Status SharedMemoryCollectives::Resize(size_t capacity) {
  const size_t bytes = fixed_bytes_ + OutboxesBytes(capacity);
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && bytes > limit.rlim_cur) {
    return Status::Error("COLLECTIVE_ERROR", "the shared segment's " + std::to_string(bytes) +
                                                 " bytes exceed RLIMIT_FSIZE (ulimit -f) of " +
                                                 std::to_string(limit.rlim_cur) + " bytes");
  }
  if (ftruncate(fd_, static_cast<off_t>(bytes)) != 0) return ErrnoError("COLLECTIVE_ERROR", "ftruncate");
  return Status::Ok();
}

Status SharedMemoryCollectives::MapOutboxes(size_t capacity) {
  const size_t bytes = OutboxesBytes(capacity);
  uint8_t* mapped = nullptr;
  if (bytes > 0) {
    void* at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(fixed_bytes_));
    if (at == MAP_FAILED) return ErrnoError("COLLECTIVE_ERROR", "mmap");
    mapped = static_cast<uint8_t*>(at);
  }
  if (outboxes_ != nullptr) munmap(outboxes_, OutboxesBytes(capacity_));
  outboxes_ = mapped;
  capacity_ = capacity;
  return Status::Ok();
}

size_t SharedMemoryCollectives::OutboxesBytes(size_t capacity) const {
  return 2 * static_cast<size_t>(world_size_) * capacity;
}

float* SharedMemoryCollectives::Partials(int rank) const {
  if (partial_floats_ == 0) return nullptr;
  return reinterpret_cast<float*>(base_ + header_bytes_) + static_cast<size_t>(rank) * partial_floats_;
}

float* SharedMemoryCollectives::Reduced() const {
  if (reduced_floats_ == 0) return nullptr;
  return reinterpret_cast<float*>(base_ + header_bytes_) +
         static_cast<size_t>(world_size_) * partial_floats_;
}

SharedMemoryCollectives::Slot& SharedMemoryCollectives::SlotOf(int rank) const {
  return *reinterpret_cast<Slot*>(base_ + kLine * (1 + static_cast<size_t>(rank)));
}

uint8_t* SharedMemoryCollectives::Outbox(int rank, uint32_t operation) const {
  return outboxes_ + (2 * static_cast<size_t>(rank) + operation % 2) * capacity_;
}

std::atomic<uint64_t>* SharedMemoryCollectives::Checksums() const {
  return reinterpret_cast<std::atomic<uint64_t>*>(base_ + kLine * (1 + static_cast<size_t>(world_size_)));
}

std::atomic<uint64_t>& SharedMemoryCollectives::OutboxChecksum(int rank, uint32_t operation, int block) const {
  return Checksums()[area_slices_ + (2 * static_cast<size_t>(rank) + operation % 2) * world_size_ + block];
}

Status SharedMemoryCollectives::Fail(const char* op, const std::string& what) {
  broken_ = Status::Error("COLLECTIVE_ERROR", std::string(op) + ": " + what + " (rank " +
                                                  std::to_string(rank_) + ")");
  return broken_;
}

Status SharedMemoryCollectives::Begin(const char* op, size_t bytes) {
  if (!broken_.ok()) return broken_;
  if (bytes > capacity_) {
    // Every rank makes the same calls, so every rank grows here, to the same
    // size. The barrier first: no peer still reads an outbox at the old
    // offsets. Growing a memfd keeps its bytes; ftruncate to the size a peer
    // already set is a no-op.
    ++op_;
    DMLP_RETURN_IF_ERROR(PublishAndWait(op));
    const size_t capacity = RoundUpToGrain(bytes);
    if (Status resized = Resize(capacity); !resized.ok()) return Fail(op, resized.detail() + " (growing it)");
    if (Status mapped = MapOutboxes(capacity); !mapped.ok()) return Fail(op, mapped.detail());
  }
  ++op_;
  return Status::Ok();
}

Status SharedMemoryCollectives::PublishAndWait(const char* op) {
  std::atomic<uint32_t>& mine = SlotOf(rank_).published;
  mine.store(op_, std::memory_order_release);  // after this rank's outbox writes
  FutexWakeAll(&mine);
  for (int peer = 0; peer < world_size_; ++peer) {
    if (peer != rank_) DMLP_RETURN_IF_ERROR(AwaitPeer(op, peer));
  }
  return Status::Ok();
}

Status SharedMemoryCollectives::AwaitPeer(const char* op, int peer) {
  std::atomic<uint32_t>& word = SlotOf(peer).published;
  for (int spin = 0; spin < kSpinsBeforeSleep; ++spin) {
    if (AtOrPast(word.load(std::memory_order_acquire), op_)) return Status::Ok();
    _mm_pause();
  }
  while (true) {
    const uint32_t seen = word.load(std::memory_order_acquire);
    if (AtOrPast(seen, op_)) return Status::Ok();
    if (peer_loss_ && peer_loss_->lost()) return Fail(op, "a peer was lost: " + peer_loss_->failure().ToString());
    if (!gloo_->ConnectionsIntact())
      return Fail(op, "rank " + std::to_string(peer) + " is gone (its connection closed)");
    FutexWait(&word, seen, kWaitSlice);
  }
}

Status SharedMemoryCollectives::AllToAll(const float* send, float* recv, size_t count_per_peer) {
  if (count_per_peer == 0) return Status::Ok();
  if (count_per_peer > SIZE_MAX / sizeof(float) / static_cast<size_t>(world_size_))
    return Fail("alltoall", "count overflows");
  const size_t block = count_per_peer * sizeof(float);
  DMLP_RETURN_IF_ERROR(Begin("alltoall", block * static_cast<size_t>(world_size_)));
  const auto* from = reinterpret_cast<const uint8_t*>(send);
  auto* to = reinterpret_cast<uint8_t*>(recv);
  uint8_t* outbox = Outbox(rank_, op_);
  for (int q = 0; q < world_size_; ++q) {
    if (q == rank_) continue;
    std::memcpy(outbox + q * block, from + q * block, block);
    OutboxChecksum(rank_, op_, q).store(SliceChecksum(send + q * count_per_peer, count_per_peer),
                                        std::memory_order_relaxed);
  }
  std::memcpy(to + rank_ * block, from + rank_ * block, block);
  DMLP_RETURN_IF_ERROR(PublishAndWait("alltoall"));
  for (int p = 0; p < world_size_; ++p) {
    if (p != rank_) DMLP_RETURN_IF_ERROR(ReadOutboxBlock("alltoall", p, rank_, rank_ * block, block, to + p * block));
  }
  return Status::Ok();
}

Status SharedMemoryCollectives::AllGather(const float* send, float* recv, size_t count_per_rank) {
  if (count_per_rank == 0) return Status::Ok();
  if (count_per_rank > SIZE_MAX / sizeof(float) / static_cast<size_t>(world_size_))
    return Fail("allgather", "count overflows");
  const size_t block = count_per_rank * sizeof(float);
  DMLP_RETURN_IF_ERROR(Begin("allgather", block));
  auto* to = reinterpret_cast<uint8_t*>(recv);
  std::memcpy(Outbox(rank_, op_), send, block);
  OutboxChecksum(rank_, op_, 0).store(SliceChecksum(send, count_per_rank), std::memory_order_relaxed);
  if (send != recv + static_cast<size_t>(rank_) * count_per_rank) std::memcpy(to + rank_ * block, send, block);
  DMLP_RETURN_IF_ERROR(PublishAndWait("allgather"));
  for (int p = 0; p < world_size_; ++p) {
    if (p != rank_) DMLP_RETURN_IF_ERROR(ReadOutboxBlock("allgather", p, 0, 0, block, to + p * block));
  }
  return Status::Ok();
}

Status SharedMemoryCollectives::AllReduceSum(float* data, size_t count) {
  if (!broken_.ok()) return broken_;
  return gloo_->AllReduceSum(data, count);
}

Status SharedMemoryCollectives::Barrier() {
  DMLP_RETURN_IF_ERROR(Begin("barrier", 0));
  return PublishAndWait("barrier");
}

Result<std::unique_ptr<Collectives>> ConnectCpuCollectives(Rendezvous& rendezvous,
                                                           CpuTransport transport, const SharedSizes& sizes,
                                                           const std::string& host_identity) {
  const int rank = rendezvous.rank();
  const int world_size = rendezvous.world_size();
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<GlooCollectives> gloo, GlooCollectives::Connect(rendezvous));
  // Each rank's choice and host, so that every rank decides alike.
  DMLP_ASSIGN_OR_RETURN(std::vector<std::string> entries,
                        rendezvous.AllGather("transport/host", std::string(CpuTransportName(transport)) +
                                                                   " " + host_identity));
  std::vector<std::string> hosts;  // each rank's host identity ("choice identity" split once)
  bool any_tcp = false, any_shm = false;
  int elsewhere = -1;  // a rank on another host than rank 0
  for (int r = 0; r < world_size; ++r) {
    const size_t space = entries[r].find(' ');
    const std::string choice = entries[r].substr(0, space);
    hosts.push_back(entries[r].substr(space + 1));
    any_tcp |= choice == CpuTransportName(CpuTransport::kTcp);
    any_shm |= choice == CpuTransportName(CpuTransport::kSharedMemory);
    if (elsewhere < 0 && hosts[r] != hosts[0]) elsewhere = r;
  }
  if (any_tcp && any_shm) {  // PlanFingerprint makes ranks agree; this is the last line of defence
    return ConnectError(rank, "ranks disagree on DMLP_CPU_TRANSPORT (tcp and shm)");
  }
  if (any_tcp) return std::unique_ptr<Collectives>(std::move(gloo));
  if (elsewhere >= 0) {
    if (!any_shm) return std::unique_ptr<Collectives>(std::move(gloo));
    return ConnectError(rank, "DMLP_CPU_TRANSPORT=shm needs every rank on one host, and rank " +
                                  std::to_string(elsewhere) + " runs elsewhere (" + hosts[elsewhere] +
                                  "; rank 0: " + hosts[0] + ")");
  }
  std::shared_ptr<PeerLoss> peer_loss = rendezvous.peer_loss();
  std::unique_ptr<SharedMemoryCollectives> shm(
      new SharedMemoryCollectives(std::move(gloo), peer_loss, rank, world_size));
  // Rank 0 creates the segment and says where it is; every rank then says
  // whether it could map it, and all keep it only if all could.
  std::string where;
  Status attached = Status::Ok();
  if (rank == 0) {
    attached = shm->Attach(0, 0, sizes);
    where = attached.ok() ? std::to_string(getpid()) + " " + std::to_string(shm->fd_) : "";
    DMLP_RETURN_IF_ERROR(rendezvous.Set("transport/segment", where));
  } else {
    DMLP_ASSIGN_OR_RETURN(where, rendezvous.Get("transport/segment"));
    int pid = 0, fd = -1;
    if (where.empty()) {
      // Rank 0 could not make one: its own outcome says why; this rank failed nothing.
    } else if (std::sscanf(where.c_str(), "%d %d", &pid, &fd) != 2) {
      attached = Status::Error("COLLECTIVE_ERROR", "rank 0's segment is not named as \"pid fd\": " + where);
    } else {
      attached = shm->Attach(pid, fd, sizes);
    }
  }
  // Each rank's outcome: "" when it attached, else "<its pid> <why not>".
  DMLP_ASSIGN_OR_RETURN(std::vector<std::string> outcomes,
                        rendezvous.AllGather("transport/attached",
                                             attached.ok() ? "" : std::to_string(getpid()) + " " + attached.detail()));
  for (int r = 0; r < world_size; ++r) {
    if (outcomes[r].empty()) continue;
    const size_t space = outcomes[r].find(' ');
    const pid_t failed_pid = static_cast<pid_t>(std::atoi(outcomes[r].substr(0, space).c_str()));
    const std::string why = "rank " + std::to_string(r) + " cannot share memory: " + outcomes[r].substr(space + 1);
    if (!any_shm) {
      if (rank == 0) std::fprintf(stderr, "dmlp-train: warning: %s; the ranks use TCP\n", why.c_str());
      return std::unique_ptr<Collectives>(std::move(shm->gloo_));
    }
    // The job's failure is the failing rank's own error: it reports it now,
    // while the others wait for it to leave (the rendezvous says PEER_LOST)
    // and to exit, and only then fail. dmlp-launch names the first rank to
    // exit; were every rank to fail here at once, that could be a healthy
    // rank, or one that saw its coordinator go (PEER_LOST) first.
    if (!attached.ok()) {
      return ConnectError(rank, "DMLP_CPU_TRANSPORT=shm: rank " + std::to_string(rank) +
                                    " cannot share memory: " + attached.detail());
    }
    Status left = rendezvous.Barrier("transport/unshared");  // never completes: the failing ranks never come
    AwaitExit(failed_pid, rendezvous.heartbeat_timeout());   // one host: the pid is that rank's (LocalHostIdentity)
    return left.ok() ? ConnectError(rank, "DMLP_CPU_TRANSPORT=shm: " + why) : left;
  }
  // Rank 0 may close nothing before every rank opened its fd: the barrier
  // also proves the segment works (the operation counters start at 0).
  DMLP_RETURN_IF_ERROR(shm->Barrier());
  return std::unique_ptr<Collectives>(std::move(shm));
}

}  // namespace dmlp
