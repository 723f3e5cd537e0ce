#include "trainer/memory_plan.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

#include "common/format/error_codes.h"
#include "trainer/backend.h"
#include "trainer/cgroup_memory.h"

namespace dmlp {
namespace {

constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

// Saturating arithmetic: once a term overflows, the whole need is "more than
// 64 bits can say", which no machine has.
uint64_t Add(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? kSaturated : sum;
}
uint64_t Mul(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? kSaturated : product;
}
uint64_t U(int64_t value) { return value < 0 ? 0 : static_cast<uint64_t>(value); }
uint64_t Floats(uint64_t count) { return Mul(count, 4); }

// Mirrors of the CUDA backend's constants (trainer/cuda/backend_cuda.cc
// kPartialAlignFloats, gemm_cublas.h kCublasWorkspaceBytes), kept here so this
// file builds without CUDA.
constexpr uint64_t kCudaPartialAlignFloats = 64;
constexpr uint64_t kCudaCublasWorkspaceBytes = uint64_t{32} << 20;

// The sizes both platforms share, in floats unless named bytes.
struct Shapes {
  uint64_t image_bytes = 0;   // 12 P + 4: params, Adam count, mu, nu
  uint64_t shard = 0;         // samples per shard
  uint64_t local_shards = 0;  // shards per rank
  uint64_t padded = 0;        // P + 1 rounded up to the world size (ordered_reduce.h)
  uint64_t slice = 0;
  uint64_t activations = 0;   // one shard's layer outputs
  uint64_t widest = 0;        // widest layer output (the backward pass's deltas)
  bool exchange = false;      // ordered reduction over several ranks
  bool audit = false;         // a second rank may recompute a shard (shard_audit.h)
};

Shapes ShapesOf(const Plan& plan) {
  Shapes s;
  const ModelShape& m = plan.model;
  const uint64_t p = StateLayout::CountParameters(m);
  s.image_bytes = Add(Mul(Floats(p), 3), 4);
  s.shard = U(plan.shard_size());
  s.local_shards = U(plan.shards_per_rank());
  const uint64_t world = std::max<uint64_t>(1, U(plan.num_processes));
  // (P + 1 + W - 1) / W * W without overflowing near the top.
  const uint64_t slices = Add(p, world) / world;
  s.padded = Mul(slices, world);
  s.slice = slices;
  s.activations = Mul(s.shard, Add(Mul(U(m.layers), U(m.width)), U(m.classes)));
  s.widest = m.layers > 0 ? std::max(U(m.width), U(m.classes)) : U(m.classes);
  s.exchange = plan.num_processes > 1 && plan.reduction == Reduction::kOrdered;
  s.audit = plan.audits();
  return s;
}

// What trainer/cpu/backend_cpu.cc and mlp_cpu.cc hold for the whole run.
uint64_t CpuBackendBytes(const Plan& plan, const Shapes& s) {
  uint64_t bytes = s.image_bytes;
  bytes = Add(bytes, Floats(Mul(s.shard, U(plan.model.features))));  // inputs
  bytes = Add(bytes, Floats(s.shard));                                // labels (int32)
  bytes = Add(bytes, Floats(Mul(s.local_shards, s.padded)));          // partials
  bytes = Add(bytes, Floats(s.padded));                               // reduced
  if (s.exchange) {
    if (s.local_shards > 1) bytes = Add(bytes, Floats(Mul(s.local_shards, s.padded)));  // send
    bytes = Add(bytes, Floats(Mul(U(plan.data_shards), s.slice)));                      // receive
  }
  if (s.audit) bytes = Add(bytes, Floats(s.padded));      // audit partial
  bytes = Add(bytes, Floats(s.activations));              // layer outputs
  bytes = Add(bytes, Floats(Mul(Mul(s.shard, s.widest), 2)));  // delta, delta_below
  return bytes;
}

// What trainer/cuda/backend_cuda.cc and mlp_cuda.cc allocate on the device.
uint64_t CudaDeviceBytes(const Plan& plan, const Shapes& s) {
  uint64_t bytes = s.image_bytes;
  bytes = Add(bytes, Floats(Mul(s.shard, U(plan.model.features))));  // inputs
  bytes = Add(bytes, Floats(s.shard));                                // labels
  const uint64_t stride =
      Mul(Add(s.padded, kCudaPartialAlignFloats - 1) / kCudaPartialAlignFloats,
          kCudaPartialAlignFloats);
  bytes = Add(bytes, Floats(Mul(s.local_shards, stride)));  // partials
  bytes = Add(bytes, Floats(s.padded));                     // reduced
  if (s.exchange) bytes = Add(bytes, Floats(Mul(U(plan.data_shards), s.slice)));  // receive
  if (s.audit) bytes = Add(bytes, Floats(stride));  // audit partial
  bytes = Add(bytes, Floats(s.activations));
  bytes = Add(bytes, Floats(Mul(Mul(s.shard, s.widest), 2)));  // delta, delta_below
  bytes = Add(bytes, Floats(s.shard));                         // row loss
  // GEMM=ordered needs no workspace; cuBLAS gets a fixed one (bits depend on it).
  return plan.gemm == GemmKind::kCublas ? Add(bytes, kCudaCublasWorkspaceBytes) : bytes;
}

// A "Name:   123 kB" line of a /proc file, in bytes; 0 when absent.
uint64_t ProcKilobytes(const char* path, const std::string& name) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind(name + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(name.size() + 1));
    uint64_t kilobytes = 0;
    if (fields >> kilobytes) return Mul(kilobytes, 1024);
  }
  return 0;
}

std::string Bytes(uint64_t bytes) {
  return bytes == kSaturated ? "more than " + std::to_string(kSaturated) : std::to_string(bytes);
}

}  // namespace

MemoryNeed EstimateMemory(const Plan& plan, int64_t snapshot_buffers) {
  const Shapes shapes = ShapesOf(plan);
  // The starting image (initial or checkpoint) is freed once the backend holds
  // the state, before the snapshot buffers exist, so the host peak is the
  // larger of the two, and with one snapshot buffer or more that is the buffers.
  const uint64_t host_images =
      Mul(shapes.image_bytes, std::max<uint64_t>(1, U(snapshot_buffers)));
  MemoryNeed need;
  if (plan.platform == Platform::kCpu) {
    need.host_bytes = Add(CpuBackendBytes(plan, shapes), host_images);
  } else {
    need.host_bytes = host_images;
    // The pinned copy of a partial that the shard audit hashes.
    if (shapes.audit) need.host_bytes = Add(need.host_bytes, Floats(shapes.padded));
    need.device_bytes = CudaDeviceBytes(plan, shapes);
  }
  return need;
}

HostMemory HostMemoryAvailable() {
  HostMemory host;
  host.available = ProcKilobytes("/proc/meminfo", "MemAvailable");
  if (host.available == 0) host.available = kSaturated;  // no /proc: nothing to compare with
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const uint64_t used = ProcKilobytes("/proc/self/status", "VmSize");
    const uint64_t cap = static_cast<uint64_t>(limit.rlim_cur);
    host.available = std::min(host.available, cap > used ? cap - used : 0);
  }
  const std::optional<CgroupMemory> cgroup = ReadCgroupMemory();
  if (cgroup && cgroup->available < host.available) {
    host.available = cgroup->available;
    host.bound = "memory cgroup " + cgroup->cgroup + ": " + cgroup->limit_file + " " +
                 std::to_string(cgroup->limit) + " bytes, " + std::to_string(cgroup->in_use) + " in use";
  }
  return host;
}

Status CheckMemoryFits(uint64_t need, uint64_t available, bool device, const std::string& bound) {
  if (need <= available && need != kSaturated) return Status::Ok();
  return Status::Error(kPlanTooLarge, "needs " + Bytes(need) + " bytes" +
                                             (device ? " of GPU memory" : "") + ", " +
                                             Bytes(available) + " available" +
                                             (bound.empty() ? "" : " (" + bound + ")"));
}

Status CheckPlanMemory(const Plan& plan, int64_t snapshot_buffers) {
  const MemoryNeed need = EstimateMemory(plan, snapshot_buffers);
  const HostMemory host = HostMemoryAvailable();
  DMLP_RETURN_IF_ERROR(CheckMemoryFits(need.host_bytes, host.available, false, host.bound));
  if (plan.platform != Platform::kCuda) return Status::Ok();
  // Only a plan whose numbers cannot fit anywhere is refused without asking the GPU.
  DMLP_RETURN_IF_ERROR(CheckMemoryFits(need.device_bytes, kSaturated - 1, true));
  DMLP_ASSIGN_OR_RETURN(const DeviceMemory device, CudaDeviceMemory(plan));
  return CheckDeviceMemoryFits(need.device_bytes, device);
}

Status CheckDeviceMemoryFits(uint64_t rank_need, const DeviceMemory& device) {
  const int64_t ranks = std::max<int64_t>(1, device.slot.ranks_on_device);
  if (ranks == 1) return CheckMemoryFits(rank_need, device.free_bytes, true);
  // The ranks on one GPU start together and each sees the free memory before
  // its neighbours allocate: together they must fit in it.
  const uint64_t need = Mul(rank_need, U(ranks));
  if (need <= device.free_bytes && need != kSaturated) return Status::Ok();
  return Status::Error(kPlanTooLarge,
                       "needs " + Bytes(need) + " bytes of GPU memory (" + std::to_string(ranks) +
                           " ranks share GPU " + std::to_string(device.slot.ordinal) + ", " +
                           Bytes(rank_need) + " each), " + Bytes(device.free_bytes) + " available");
}

}  // namespace dmlp
