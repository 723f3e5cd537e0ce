// The CUDA platform (docs/architecture.md): one GPU per rank, data generated on
// the GPU, the plan's GEMM (GEMM=ordered: the CPU's chains; GEMM=cublas) and
// this platform's kernels per shard (cuda/mlp_cuda.h),
// the ordered reduction (trainer/reduction/) with NCCL (or, with
// COLLECTIVES=gloo, Gloo staged through host memory: cuda/gloo_staged.h)
// moving bytes and cuda/fold.h adding them,
// Adam on the device. Everything of an update runs on one compute stream; the
// host only enqueues, so Update() returns before the GPU finished, and waits
// (cuda/stream_wait.h) only in LastLoss, LoadState and the snapshot waiter.
//
// The state lives on the device as one canonical image (params, int32 count,
// mu, nu), so a snapshot is one device->pinned-host copy on a side stream. The
// next update's Adam waits for that copy (an event), its forward/backward does
// not: the copy and the hashing overlap the next step.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "common/format/error_codes.h"
#include "trainer/backend.h"
#include "trainer/cuda/adam_update.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/data_gen.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/device_select.h"
#include "trainer/cuda/fold.h"
#include "trainer/cuda/device_gemm.h"
#include "trainer/cuda/gemm_ordered.h"
#include "trainer/cuda/gloo_staged.h"
#include "trainer/cuda/mlp_cuda.h"
#include "trainer/cuda/phase_profile.h"
#include "trainer/cuda/stream_wait.h"
#include "trainer/cuda/vendor_libraries.h"
#include "trainer/math/adam.h"
#include "trainer/math/data.h"
#include "trainer/math/device_macros.h"
#include "trainer/math/ordered_reduce.h"
#include "trainer/nccl_defaults.h"
#include "trainer/reduction/ordered_reduction.h"
#include "trainer/rendezvous/rendezvous.h"

extern char** environ;

namespace dmlp {
namespace {

using cuda::CudaEvent;
using cuda::CudaStream;
using cuda::DeviceBuffer;
using cuda::PhaseProfile;

// Shard partials start on 256-byte boundaries whatever the world size, so the
// gradient GEMMs of a shard see the same pointer alignment (and cuBLAS picks
// the same kernel) for every NUM_PROCESSES: part of GEMM=cublas's bit promise.
constexpr size_t kPartialAlignFloats = 64;

void FreePinned(uint8_t* buffer) { (void)cudaFreeHost(buffer); }

/// The plan's GEMM on `stream`.
Result<std::unique_ptr<cuda::DeviceGemm>> CreateGemm(const Plan& plan, cudaStream_t stream) {
  if (plan.gemm == GemmKind::kCublas)
    return cuda::CreateCublasGemm(stream, plan.matmul_precision == MatmulPrecision::kTf32);
  return std::unique_ptr<cuda::DeviceGemm>(std::make_unique<cuda::OrderedGemm>(stream));
}

/// Environment settings that change what cuBLAS or the device computes
/// (NCCL_* are recorded by the trainer itself).
nlohmann::json CudaEnvironment() {
  nlohmann::json settings = nlohmann::json::object();
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const size_t equals = text.find('=');
    if (equals == std::string::npos) continue;
    const std::string name = text.substr(0, equals);
    if (name.rfind("CUBLAS", 0) == 0 || name == "NVIDIA_TF32_OVERRIDE" ||
        name == "CUDA_VISIBLE_DEVICES" || name == "CUDA_DEVICE_ORDER")
      settings[name] = text.substr(equals + 1);
  }
  return settings;
}

// The fold kernel on the update's stream.
class DeviceFold final : public ShardFold {
 public:
  void set_stream(cudaStream_t stream) { stream_ = stream; }
  Status Fold(const float* partials, size_t shards, size_t stride, size_t length, float* out) override {
    return cuda::FoldShardsOnDevice(partials, shards, stride, length, out, stream_);
  }

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaBackend final : public Backend, public AuditedPartials, public TestFaultTarget {
 public:
  CudaBackend(const Plan& plan, const StateLayout& layout) : plan_(plan), layout_(layout) {
    reduction_.parameter_count = layout.parameter_count();
    reduction_.world_size = static_cast<size_t>(plan.num_processes);
    reduction_.shards_per_rank = static_cast<size_t>(plan.shards_per_rank());
    partial_stride_ = (reduction_.padded_length() + kPartialAlignFloats - 1) / kPartialAlignFloats *
                      kPartialAlignFloats;
  }

  ~CudaBackend() override {
    // Let queued work finish (a peer failure ends the wait) before the
    // collectives and the buffers go; on any failure NCCL aborts rather than flushes.
    if (!initialized_) return;
    if (broken_.ok()) broken_ = WaitForStream();
    if (comm_ != nullptr && !broken_.ok()) comm_->MarkFailed();
    comm_.reset();
  }

  Status Initialize(Rendezvous& rendezvous) {
    const bool gloo = plan_.collectives == CollectivesKind::kGloo;
    DMLP_ASSIGN_OR_RETURN(device_, cuda::SelectDevice(plan_));
    DMLP_ASSIGN_OR_RETURN(stream_, CudaStream::Create());
    DMLP_ASSIGN_OR_RETURN(copy_stream_, CudaStream::Create());
    DMLP_ASSIGN_OR_RETURN(gemm_, CreateGemm(plan_, stream_.get()));
    DMLP_ASSIGN_OR_RETURN(
        mlp_, cuda::CudaMlp::Create(layout_, plan_.shard_size(), gemm_.get(), stream_.get()));
    DMLP_ASSIGN_OR_RETURN(state_, DeviceBuffer<uint8_t>::Create(layout_.image_bytes(), true));
    const size_t shard_samples = static_cast<size_t>(plan_.shard_size());
    DMLP_ASSIGN_OR_RETURN(inputs_,
                          DeviceBuffer<float>::Create(shard_samples * plan_.model.features));
    DMLP_ASSIGN_OR_RETURN(labels_, DeviceBuffer<int32_t>::Create(shard_samples));
    // Zeroed once: the padding after the loss is never written and must stay 0.
    DMLP_ASSIGN_OR_RETURN(
        partials_, DeviceBuffer<float>::Create(reduction_.shards_per_rank * partial_stride_, true));
    DMLP_ASSIGN_OR_RETURN(reduced_, DeviceBuffer<float>::Create(reduction_.padded_length(), true));
    const bool ordered_exchange = plan_.num_processes > 1 && plan_.reduction == Reduction::kOrdered;
    if (ordered_exchange) {
      DMLP_ASSIGN_OR_RETURN(receive_, DeviceBuffer<float>::Create(size_t(plan_.data_shards) *
                                                                  reduction_.slice_length()));
    }
    if (plan_.audits()) {
      // Any rank may be asked to audit a shard (shard_audit.h); zeroed once like
      // partials_, so the padding after the loss stays 0.
      DMLP_ASSIGN_OR_RETURN(audit_partial_, DeviceBuffer<float>::Create(partial_stride_, true));
      void* audit_host = nullptr;
      CUDA_CHECK(cudaMallocHost(&audit_host, reduction_.padded_length() * sizeof(float)));
      audit_host_.reset(static_cast<uint8_t*>(audit_host));
      DMLP_ASSIGN_OR_RETURN(audit_copied_, CudaEvent::Create());
    }
    void* loss_host = nullptr;
    CUDA_CHECK(cudaMallocHost(&loss_host, sizeof(float)));
    loss_host_.reset(static_cast<uint8_t*>(loss_host));
    DMLP_ASSIGN_OR_RETURN(loss_ready_, CudaEvent::Create());
    DMLP_ASSIGN_OR_RETURN(state_ready_, CudaEvent::Create());
    DMLP_ASSIGN_OR_RETURN(stream_idle_, CudaEvent::Create());
    // The strict header = library check only where a communicator will exist:
    // a 1-rank or gloo job hands NCCL nothing, so a mismatch cannot hurt it.
    DMLP_ASSIGN_OR_RETURN(nccl_version_, cuda::NcclVersionForFingerprint(UsesNccl(plan_)));
    if (plan_.num_processes > 1 && gloo) {
      DMLP_ASSIGN_OR_RETURN(comm_, cuda::GlooStagedCollectives::Connect(rendezvous));
    } else if (plan_.num_processes > 1) {
      DMLP_ASSIGN_OR_RETURN(
          comm_, cuda::CreateNcclCollectives(
                     rendezvous, std::chrono::seconds(plan_.heartbeat_timeout_seconds)));
    }
    fold_.set_stream(stream_.get());
    if (comm_ != nullptr)
      transport_ = std::make_unique<cuda::DeviceReductionTransport>(*comm_, stream_.get(), receive_.get());
    reducer_ = std::make_unique<OrderedReduction>(plan_.reduction, reduction_,
                                                  static_cast<int>(plan_.process_id),
                                                  static_cast<size_t>(plan_.data_shards), fold_,
                                                  transport_.get());
    initialized_ = true;
    return Status::Ok();
  }

  nlohmann::json Fingerprint() const override {
    // The device's PCI bus id, ordinal and memory size decide no bits: they
    // are in Device(), not here, so runs on two GPUs of one model compare.
    // "gemm" is the GEMM's own account (device_gemm.h): cuBLAS's version and
    // compute type only where cuBLAS ran; "nccl" null in a build without NCCL.
    // MATMUL_PRECISION and REDUCTION are the plan's (result.json's "plan"), and
    // only fields that the CPU platform's fingerprint lacks or that decide no
    // bit with GEMM=ordered are here (common/bit_settings.h), so a CPU run and
    // a GEMM=ordered run compare.
    return {{"platform", "cuda"},
            {"device",
             {{"name", device_.name},
              {"sm_count", device_.sm_count},
              {"compute_capability",
               std::to_string(device_.compute_major) + "." + std::to_string(device_.compute_minor)}}},
            {"cuda_driver", cuda::VersionText(device_.driver_version)},
            {"cuda_runtime", cuda::VersionText(device_.runtime_version)},
            {"gemm", gemm_->Description()},
            {"nccl", nccl_version_},
            {"collectives", comm_ ? comm_->Description() : "none (1 process)"},
            {"cuda_env", CudaEnvironment()}};
  }

  // Asked anew each time (rank-<r>.env.jsonl asks after a detected restore,
  // which may have moved the process to another GPU); the facts of the start
  // stand in only when the driver cannot answer.
  DeviceIdentity Device() const override {
    Result<cuda::DeviceFacts> now = cuda::DescribeDevice(device_.index);
    const cuda::DeviceFacts& facts = now.ok() ? *now : device_;
    return {"cuda",           facts.name,  facts.uuid, facts.pci_bus_id,
            cuda::VersionText(facts.driver_version), facts.index, facts.total_memory};
  }

  Result<SnapshotBuffer> AllocateSnapshotBuffer() override {
    void* buffer = nullptr;
    CUDA_CHECK(cudaMallocHost(&buffer, layout_.image_bytes()));
    return SnapshotBuffer(static_cast<uint8_t*>(buffer), &FreePinned);
  }

  Status LoadState(const uint8_t* image) override {
    DMLP_RETURN_IF_ERROR(broken_);
    return Guard([&]() -> Status {
      DMLP_RETURN_IF_ERROR(WaitForSnapshotCopy());
      CUDA_CHECK(cudaMemcpyAsync(state_.get(), image, layout_.image_bytes(), cudaMemcpyHostToDevice,
                                 stream_.get()));
      DMLP_RETURN_IF_ERROR(WaitForStream());
      std::memcpy(&count_, image + layout_.count_offset(), sizeof count_);
      return Status::Ok();
    });
  }

  Status ComputePartials(int64_t step, int64_t microbatch) override {
    DMLP_RETURN_IF_ERROR(broken_);
    return Guard([&] { return EnqueuePartials(step, microbatch); });
  }

  Status ReduceAndApply() override {
    DMLP_RETURN_IF_ERROR(broken_);
    return Guard([&] { return EnqueueReduceAndApply(); });
  }

  AuditedPartials* audited_partials() override { return this; }
  TestFaultTarget* test_faults() override { return this; }

  Result<PartialCopy> CopyPartial(int64_t local_shard) override {
    DMLP_RETURN_IF_ERROR(broken_);
    return CopyToAuditHost([&] { return Status::Ok(); }, Partial(local_shard));
  }

  Result<PartialCopy> CopyAuditShard(int64_t step, int64_t microbatch, int64_t shard) override {
    DMLP_RETURN_IF_ERROR(broken_);
    return CopyToAuditHost([&] { return EnqueueShard(step, microbatch, shard, audit_partial_.get()); },
                           audit_partial_.get());
  }

  Status FlipPartialBitForTests(int64_t local_shard) override {
    DMLP_RETURN_IF_ERROR(broken_);
    return Guard([&]() -> Status {
      uint32_t bits = 0;
      CUDA_CHECK(cudaMemcpyAsync(&bits, Partial(local_shard), sizeof bits, cudaMemcpyDeviceToHost,
                                 stream_.get()));
      DMLP_RETURN_IF_ERROR(WaitForStream());
      bits ^= 1u << 22;  // the top mantissa bit of the first gradient value: 33-50 % off
      CUDA_CHECK(cudaMemcpyAsync(Partial(local_shard), &bits, sizeof bits, cudaMemcpyHostToDevice,
                                 stream_.get()));
      return WaitForStream();
    });
  }

  Result<float> LastLoss() override {
    DMLP_RETURN_IF_ERROR(broken_);
    if (updates_ == 0) return Status::Error(kInternal, "LastLoss before any update");
    DMLP_RETURN_IF_ERROR(Guard([&]() -> Status {
      DMLP_RETURN_IF_ERROR(cuda::WaitForEvent(loss_ready_.get(), Peers()));
      return profile_.Harvest();
    }));
    float loss_sum = 0;
    std::memcpy(&loss_sum, loss_host_.get(), sizeof loss_sum);
    return FDiv(loss_sum, static_cast<float>(plan_.batch));
  }

  Status FlipBitForTests(size_t byte, int bit) override {
    DMLP_RETURN_IF_ERROR(broken_);
    if (byte >= layout_.image_bytes()) return Status::Error(kInvalidArgument, "flip past the state image");
    // On the compute stream, so it lands after every update issued so far and
    // before the next one and the next snapshot (which waits on this stream).
    return Guard([&]() -> Status {
      uint8_t value = 0;
      CUDA_CHECK(cudaMemcpyAsync(&value, state_.get() + byte, 1, cudaMemcpyDeviceToHost, stream_.get()));
      DMLP_RETURN_IF_ERROR(WaitForStream());
      value ^= static_cast<uint8_t>(1u << bit);
      CUDA_CHECK(cudaMemcpyAsync(state_.get() + byte, &value, 1, cudaMemcpyHostToDevice, stream_.get()));
      return WaitForStream();  // `value` must outlive the copy
    });
  }

  Result<SnapshotWaiter> BeginSnapshot(uint8_t* buffer) override {
    DMLP_RETURN_IF_ERROR(broken_);
    std::shared_ptr<CudaEvent> copied;
    DMLP_RETURN_IF_ERROR(Guard([&]() -> Status {
      DMLP_ASSIGN_OR_RETURN(CudaEvent done, CudaEvent::Create());
      copied = std::make_shared<CudaEvent>(std::move(done));
      CUDA_CHECK(cudaEventRecord(state_ready_.get(), stream_.get()));
      CUDA_CHECK(cudaStreamWaitEvent(copy_stream_.get(), state_ready_.get(), 0));
      CUDA_CHECK(cudaMemcpyAsync(buffer, state_.get(), layout_.image_bytes(),
                                 cudaMemcpyDeviceToHost, copy_stream_.get()));
      CUDA_CHECK(cudaEventRecord(copied->get(), copy_stream_.get()));
      return Status::Ok();
    }));
    snapshot_copied_ = copied;
    // Runs on the hasher thread: the device is per thread in CUDA, so set it.
    // REQUIRES (backend.h): the backend outlives the waiter.
    const int device = device_.index;
    cuda::PeerCheck peers = Peers();
    return SnapshotWaiter([copied, device, peers]() -> Status {
      CUDA_CHECK(cudaSetDevice(device));
      return cuda::WaitForEvent(copied->get(), peers);
    });
  }

  nlohmann::json Profile() const override { return profile_.Seconds(); }

 private:
  float* params() const { return reinterpret_cast<float*>(state_.get()); }
  float* Partial(int64_t local_shard) const {
    return partials_.get() + static_cast<size_t>(local_shard) * partial_stride_;
  }
  float* mu() const { return reinterpret_cast<float*>(state_.get() + layout_.mu_offset()); }
  float* nu() const { return reinterpret_cast<float*>(state_.get() + layout_.nu_offset()); }
  int32_t* count_slot() const {
    return reinterpret_cast<int32_t*>(state_.get() + layout_.count_offset());
  }

  /// NCCL's asynchronous error, for waits that may sit behind a collective.
  cuda::PeerCheck Peers() const {
    if (comm_ == nullptr) return nullptr;
    const cuda::DeviceCollectives* comm = comm_.get();
    return [comm] { return comm->CheckAsyncError(); };
  }

  /// Runs `body`; its first error breaks the backend (every later call returns it).
  template <typename Body>
  Status Guard(Body&& body) {
    Status status = body();
    if (!status.ok()) {
      broken_ = status;
      if (comm_ != nullptr) comm_->MarkFailed();
    }
    return status;
  }

  Status WaitForStream() {
    CUDA_CHECK(cudaEventRecord(stream_idle_.get(), stream_.get()));
    return cuda::WaitForEvent(stream_idle_.get(), Peers());
  }

  /// Makes the compute stream wait until the last snapshot copy read the state.
  Status WaitForSnapshotCopy() {
    if (snapshot_copied_ != nullptr)
      CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), snapshot_copied_->get(), 0));
    return Status::Ok();
  }

  /// Step 1 of the update contract (backend.h): every local shard's partial.
  Status EnqueuePartials(int64_t step, int64_t microbatch) {
    DMLP_RETURN_IF_ERROR(profile_.Begin(stream_.get()));
    for (size_t local = 0; local < reduction_.shards_per_rank; ++local) {
      DMLP_RETURN_IF_ERROR(EnqueueShard(step, microbatch,
                                        plan_.first_shard() + static_cast<int64_t>(local),
                                        partials_.get() + local * partial_stride_));
    }
    return Status::Ok();
  }

  // One shard's partial: its owner and its auditor (CopyAuditShard) run this
  // same code on the same shapes (partials start 256-byte aligned in both
  // buffers), so a healthy pair of same-model GPUs gives the same bits.
  Status EnqueueShard(int64_t step, int64_t microbatch, int64_t shard, float* partial) {
    cudaStream_t stream = stream_.get();
    const SampleSpec spec{static_cast<uint32_t>(plan_.seed), plan_.model.features,
                          plan_.model.classes};
    const int64_t shard_size = plan_.shard_size();
    DMLP_RETURN_IF_ERROR(cuda::GenerateSamplesOnDevice(spec, step, microbatch, shard * shard_size,
                                                       (shard + 1) * shard_size, inputs_.get(),
                                                       labels_.get(), stream));
    DMLP_RETURN_IF_ERROR(profile_.Mark(PhaseProfile::kData, stream));
    DMLP_RETURN_IF_ERROR(mlp_.ShardGradient(params(), inputs_.get(), labels_.get(), plan_.batch,
                                            partial, partial + reduction_.loss_index()));
    return profile_.Mark(PhaseProfile::kCompute, stream);
  }

  /// Enqueues `produce` (what writes `partial`), then the copy of the padded
  /// partial into the pinned audit buffer, on the compute stream, so the next
  /// update cannot overwrite it first; the waiter (any thread) waits for the copy.
  template <typename Produce>
  Result<PartialCopy> CopyToAuditHost(Produce&& produce, const float* partial) {
    const size_t bytes = reduction_.padded_length() * sizeof(float);
    DMLP_RETURN_IF_ERROR(Guard([&]() -> Status {
      if (audit_host_ == nullptr || audit_partial_.get() == nullptr)
        return Status::Error(kInternal, "no audit buffer: the plan does not audit");
      DMLP_RETURN_IF_ERROR(produce());
      CUDA_CHECK(cudaMemcpyAsync(audit_host_.get(), partial, bytes, cudaMemcpyDeviceToHost, stream_.get()));
      CUDA_CHECK(cudaEventRecord(audit_copied_.get(), stream_.get()));
      return Status::Ok();
    }));
    // As BeginSnapshot's waiter: the device is per thread in CUDA.
    const int device = device_.index;
    cuda::PeerCheck peers = Peers();
    cudaEvent_t copied = audit_copied_.get();
    return PartialCopy{audit_host_.get(), bytes, [copied, device, peers]() -> Status {
                         CUDA_CHECK(cudaSetDevice(device));
                         return cuda::WaitForEvent(copied, peers);
                       }};
  }

  /// Steps 2 and 3 of the update contract, after EnqueuePartials.
  Status EnqueueReduceAndApply() {
    cudaStream_t stream = stream_.get();
    // Step 2: the partials' sum (padded: gradient, loss sum, zeros).
    DMLP_ASSIGN_OR_RETURN(const float* gradient,
                          reducer_->Reduce({partials_.get(), partial_stride_, reduced_.get()}, ""));
    DMLP_RETURN_IF_ERROR(profile_.Mark(PhaseProfile::kCollectives, stream));
    DMLP_RETURN_IF_ERROR(WaitForSnapshotCopy());
    const int32_t next_count = AdamNextCount(count_);
    DMLP_RETURN_IF_ERROR(cuda::AdamUpdateOnDevice(
        MakeAdamScalars(next_count, plan_.learning_rate), gradient, params(), mu(), nu(),
        layout_.parameter_count(), count_slot(), next_count, stream));
    DMLP_RETURN_IF_ERROR(profile_.Mark(PhaseProfile::kOptimizer, stream));
    CUDA_CHECK(cudaMemcpyAsync(loss_host_.get(), gradient + reduction_.loss_index(),
                               sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaEventRecord(loss_ready_.get(), stream));
    count_ = next_count;
    ++updates_;
    return Status::Ok();
  }

  const Plan plan_;
  const StateLayout layout_;
  ReductionLayout reduction_;
  size_t partial_stride_ = 0;  // floats between shard partials (>= padded length)
  cuda::DeviceFacts device_;
  nlohmann::json nccl_version_;  // NcclVersionForFingerprint
  // Declaration order is destruction order reversed: streams and events last,
  // the communicator first (it must abort before memory its kernels use is freed).
  CudaStream stream_;       // every update: data, GEMMs, kernels, NCCL
  CudaStream copy_stream_;  // snapshot copies only
  CudaEvent loss_ready_, state_ready_, stream_idle_;
  CudaEvent audit_copied_;  // the shard audit's last copy into audit_host_ (CopyToAuditHost)
  std::shared_ptr<CudaEvent> snapshot_copied_;  // the last snapshot copy's completion
  PhaseProfile profile_;
  std::unique_ptr<cuda::DeviceGemm> gemm_;
  cuda::CudaMlp mlp_;
  DeviceBuffer<uint8_t> state_;  // canonical image: params, count, mu, nu
  DeviceBuffer<float> inputs_;
  DeviceBuffer<int32_t> labels_;
  DeviceBuffer<float> partials_;          // [local shard][partial_stride_]: gradient, loss, zeros
  DeviceBuffer<float> receive_;          // ordered exchange with several ranks: [global shard][slice]
  DeviceBuffer<float> reduced_;           // padded: global gradient, loss sum, zeros
  DeviceBuffer<float> audit_partial_;     // [partial_stride_]: another rank's shard, recomputed for the audit
  SnapshotBuffer loss_host_{nullptr, &FreePinned};  // pinned float: the last update's loss sum
  SnapshotBuffer audit_host_{nullptr, &FreePinned};  // pinned [padded]: the partial the audit hashes
  std::unique_ptr<cuda::DeviceCollectives> comm_;  // null with one process
  DeviceFold fold_;
  std::unique_ptr<cuda::DeviceReductionTransport> transport_;  // over comm_; null with one process
  std::unique_ptr<OrderedReduction> reducer_;  // step 2, over fold_ and transport_
  int32_t count_ = 0;  // Adam count of the state the next update starts from
  int64_t updates_ = 0;
  bool initialized_ = false;  // Initialize() succeeded
  Status broken_;
};

}  // namespace

Result<DeviceMemory> CudaDeviceMemory(const Plan& plan) {
  cuda::SetErrorRank(static_cast<int>(plan.process_id));
  DMLP_RETURN_IF_ERROR(cuda::CheckVendorLibraries(plan));
  DMLP_ASSIGN_OR_RETURN(const int count, cuda::VisibleDeviceCount());
  DeviceMemory memory;
  DMLP_ASSIGN_OR_RETURN(memory.slot, DeviceSlotFor(plan, count));
  DMLP_RETURN_IF_ERROR(cuda::SelectDevice(plan).status());
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  memory.free_bytes = static_cast<uint64_t>(free_bytes);
  return memory;
}

Result<std::unique_ptr<Backend>> CreateCudaBackend(const Plan& plan, const StateLayout& layout,
                                                   Rendezvous& rendezvous) {
  cuda::SetErrorRank(static_cast<int>(plan.process_id));
  DMLP_RETURN_IF_ERROR(cuda::CheckVendorLibraries(plan));
  auto backend = std::make_unique<CudaBackend>(plan, layout);
  DMLP_RETURN_IF_ERROR(backend->Initialize(rendezvous));
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace dmlp
