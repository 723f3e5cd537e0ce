// The CPU platform: CpuMlp (pinned CPU GEMM) per shard, the ordered reduction
// (trainer/reduction/) folding on the rank's threads with Gloo over TCP or a
// shared segment moving the bytes, Adam on the host. The state lives as one canonical image, so a
// snapshot is a single memcpy.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "common/env.h"
#include "trainer/backend.h"
#include "trainer/cpu/adam_cpu.h"
#include "trainer/cpu/checksummed_passes.h"
#include "trainer/cpu/collectives_gloo.h"
#include "trainer/cpu/collectives_shm.h"
#include "trainer/cpu/cpu_parallel.h"
#include "trainer/cpu/gemm_cpu.h"
#include "trainer/cpu/mlp_cpu.h"
#include "trainer/cpu/slice_checksum.h"
#include "trainer/math/data.h"
#include "trainer/math/ordered_reduce.h"
#include "trainer/reduction/ordered_reduction.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {
namespace {

std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

class PhaseTimer {
 public:
  explicit PhaseTimer(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() {
    total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

// The reduction vector's layout for this rank (trainer/math/ordered_reduce.h).
ReductionLayout ReductionFor(const Plan& plan, const StateLayout& layout) {
  return {layout.parameter_count(), static_cast<size_t>(plan.num_processes),
          static_cast<size_t>(plan.shards_per_rank())};
}

// FoldShardsInOrder on the rank's threads: each element's sum is whole on one thread.
class CpuFold final : public ShardFold {
 public:
  Status Fold(const float* partials, size_t shards, size_t stride, size_t length, float* out) override {
    ParallelRanges(length, kElementGrain, [=](size_t first, size_t last) {
      FoldShardsInOrder(partials + first, shards, stride, last - first, out + first);
    });
    return Status::Ok();
  }

  static constexpr size_t kElementGrain = 4096;  // floats
};

class CpuBackend final : public Backend, public AuditedPartials, public TestFaultTarget {
 public:
  CpuBackend(const Plan& plan, const StateLayout& layout, CpuMlp mlp,
             std::unique_ptr<Collectives> collectives)
      : plan_(plan),
        layout_(layout),
        mlp_(std::move(mlp)),
        collectives_(std::move(collectives)),
        reduction_(plan.reduction, ReductionFor(plan, layout), static_cast<int>(plan.process_id),
                   static_cast<size_t>(plan.data_shards), fold_, collectives_.get()),
        image_(layout.image_bytes()),
        inputs_(static_cast<size_t>(plan.shard_size() * plan.model.features)),
        labels_(static_cast<size_t>(plan.shard_size())) {
    const ReductionLayout& shape = reduction_.layout();
    // With shared memory the partials and the reduced vector lie in the segment.
    const ReductionArea area = collectives_ ? collectives_->Area() : ReductionArea{};
    buffers_.partial_stride = shape.padded_length();
    if (area.partials != nullptr) {
      buffers_.partials = area.partials;
      buffers_.reduced = area.reduced;
      seals_ = area.seals;
    } else {
      own_partials_.resize(shape.shards_per_rank * shape.padded_length());
      reduced_.resize(shape.padded_length());
      buffers_.partials = own_partials_.data();
      buffers_.reduced = reduced_.data();
    }
    // Any rank may be asked to audit a shard (shard_audit.h), with one process none is.
    if (plan.audits()) audit_partial_.resize(shape.padded_length());
  }

  nlohmann::json Fingerprint() const override {
    const CpuGemmInfo& gemm = CpuGemmDescription();
    return {{"platform", "cpu"},
            {"cpu", CpuModelName()},
            {"blas",
             {{"library", gemm.library},
              {"kernel", gemm.kernel},
              {"isa", gemm.isa},
              {"threads", gemm.threads},
              {"file", gemm.file}}},
            {"collectives", collectives_ ? collectives_->Description() : "none (1 process)"},
            {"transport", Transport()}};
  }

  DeviceIdentity Device() const override { return {"cpu", CpuModelName(), "", "", ""}; }

  Result<SnapshotBuffer> AllocateSnapshotBuffer() override {
    return SnapshotBuffer(new uint8_t[layout_.image_bytes()], [](uint8_t* p) { delete[] p; });
  }

  Status LoadState(const uint8_t* image) override {
    std::memcpy(image_.data(), image, image_.size());
    return Status::Ok();
  }

  Status ComputePartials(int64_t step, int64_t microbatch) override {
    update_ = "step " + std::to_string(step) + " microbatch " + std::to_string(microbatch);
    for (size_t local = 0; local < reduction_.layout().shards_per_rank; ++local) {
      ComputeShard(step, microbatch, plan_.first_shard() + static_cast<int64_t>(local),
                   Partial(static_cast<int64_t>(local)));
    }
    return Status::Ok();
  }

  Status ReduceAndApply() override {
    const float* reduced = nullptr;
    {
      PhaseTimer timer(collective_seconds_);  // the whole step 2, as on CUDA: exchange, fold, gather
      DMLP_ASSIGN_OR_RETURN(reduced, reduction_.Reduce(buffers_, update_));
    }
    PhaseTimer timer(optimizer_seconds_);
    int32_t count = 0;
    std::memcpy(&count, image_.data() + layout_.count_offset(), 4);
    count = AdamNextCount(count);
    const AdamScalars scalars = MakeAdamScalars(count, plan_.learning_rate);
    if (seals_ != nullptr) {
      DMLP_RETURN_IF_ERROR(ApplySharedChecked(reduced, scalars));
    } else {
      last_loss_ = reduced[reduction_.layout().loss_index()] / static_cast<float>(plan_.batch);
      // Element-wise: each parameter's update reads only its own four values.
      const float* grad = reduced;
      float *p = params(), *m = mu(), *v = nu();
      ParallelRanges(layout_.parameter_count(), kElementGrain, [=](size_t first, size_t last) {
        AdamUpdate(scalars, grad + first, p + first, m + first, v + first, last - first);
      });
    }
    std::memcpy(image_.data() + layout_.count_offset(), &count, 4);
    return Status::Ok();
  }

  Result<float> LastLoss() override { return last_loss_; }

  AuditedPartials* audited_partials() override { return this; }
  TestFaultTarget* test_faults() override { return this; }

  Status FlipBitForTests(size_t byte, int bit) override {
    image_.at(byte) ^= static_cast<uint8_t>(1u << bit);  // updates run inline: nothing in flight
    return Status::Ok();
  }

  Result<SnapshotWaiter> BeginSnapshot(uint8_t* buffer) override {
    // On the rank's threads: a byte copy, split anywhere.
    const uint8_t* image = image_.data();
    ParallelRanges(image_.size(), kCopyGrain, [=](size_t first, size_t last) {
      std::memcpy(buffer + first, image + first, last - first);
    });
    return SnapshotWaiter([] { return Status::Ok(); });
  }

  // The next update overwrites the partials, so the audit's copy is taken now;
  // a recomputed shard is computed straight into the audit buffer.
  Result<PartialCopy> CopyPartial(int64_t local_shard) override {
    if (audit_partial_.empty()) return Status::Error("INTERNAL", "no audit buffer: the plan does not audit");
    std::copy_n(Partial(local_shard), audit_partial_.size(), audit_partial_.data());
    return AuditCopy();
  }

  Result<PartialCopy> CopyAuditShard(int64_t step, int64_t microbatch, int64_t shard) override {
    if (audit_partial_.empty()) return Status::Error("INTERNAL", "no audit buffer: the plan does not audit");
    ComputeShard(step, microbatch, shard, audit_partial_.data());
    return AuditCopy();
  }

  Status FlipPartialBitForTests(int64_t local_shard) override {
    uint32_t bits = 0;
    std::memcpy(&bits, Partial(local_shard), sizeof bits);
    bits ^= 1u << 22;  // the top mantissa bit of the first gradient value: 33-50 % off
    std::memcpy(Partial(local_shard), &bits, sizeof bits);
    return Status::Ok();
  }

  nlohmann::json Profile() const override {
    return {{"data", data_seconds_},
            {"compute", compute_seconds_},
            {"collectives", collective_seconds_},
            {"optimizer", optimizer_seconds_}};
  }

 private:
  // What moved the reduction's bytes (never a bit, bit_settings.h).
  const char* Transport() const { return collectives_ ? collectives_->TransportName() : "none (1 process)"; }

  float* params() { return reinterpret_cast<float*>(image_.data()); }
  float* mu() { return reinterpret_cast<float*>(image_.data() + layout_.mu_offset()); }
  float* nu() { return reinterpret_cast<float*>(image_.data() + layout_.nu_offset()); }

  PartialCopy AuditCopy() const {
    return {reinterpret_cast<const uint8_t*>(audit_partial_.data()), audit_partial_.size() * sizeof(float),
            [] { return Status::Ok(); }};
  }

  float* Partial(int64_t local_shard) {
    return buffers_.partials + static_cast<size_t>(local_shard) * buffers_.partial_stride;
  }

  // One shard's partial: its owner and its auditor (CopyAuditShard) run this
  // same code on the same shapes, so a healthy pair gives the same bits.
  void ComputeShard(int64_t step, int64_t microbatch, int64_t shard, float* partial) {
    const SampleSpec spec{static_cast<uint32_t>(plan_.seed), plan_.model.features,
                          plan_.model.classes};
    const int64_t shard_size = plan_.shard_size();
    {
      PhaseTimer timer(data_seconds_);
      // A sample's bytes do not depend on which range generates it (data.h).
      const int64_t features = plan_.model.features;
      float* inputs = inputs_.data();
      int32_t* labels = labels_.data();
      const int64_t first_sample = shard * shard_size;
      ParallelRanges(static_cast<size_t>(shard_size), kSampleGrain, [&](size_t first, size_t last) {
        GenerateSamples(spec, step, microbatch, first_sample + static_cast<int64_t>(first),
                        first_sample + static_cast<int64_t>(last),
                        inputs + static_cast<int64_t>(first) * features, labels + first);
      });
    }
    PhaseTimer timer(compute_seconds_);
    const ReductionLayout& shape = reduction_.layout();
    partial[shape.loss_index()] = mlp_.ShardGradient(params(), inputs_.data(), labels_.data(), plan_.batch, partial);
    std::fill(partial + shape.loss_index() + 1, partial + shape.padded_length(), 0.0f);
  }

  // Adam from the segment's reduced vector, which takes the checksum of
  // every slice (every rank's) from the very bytes the update and the loss
  // read (AdamUpdateSliceChecksummed): a write into the vector since its
  // slices were sealed shows now, and fails the update before its receipt
  // (cpu/collectives_shm_reduction.cc). The same element-wise update as the
  // unchecked loop: the same bits.
  Status ApplySharedChecked(const float* reduced, const AdamScalars& scalars) {
    static_assert(kElementGrain % kChecksumWordFloats == 0);
    const size_t slice = reduction_.layout().slice_length();
    float loss = 0;
    for (size_t start = 0; start < reduction_.layout().padded_length(); start += slice) {
      const uint64_t read = AdamUpdateSliceChecksummed(scalars, reduced, start, slice, layout_.parameter_count(),
                                                       kElementGrain, params(), mu(), nu(), &loss);
      DMLP_RETURN_IF_ERROR(CheckSharedSlice(reduced + start, read));
    }
    last_loss_ = loss / static_cast<float>(plan_.batch);
    return Status::Ok();
  }

  // `checksum`: of what this rank read of the slice at `read`.
  Status CheckSharedSlice(const float* read, uint64_t checksum) {
    if (Status checked = seals_->CheckSlice(read, checksum); !checked.ok()) return checked.WithContext(update_);
    return Status::Ok();
  }

  static constexpr size_t kElementGrain = CpuFold::kElementGrain;  // floats
  static constexpr size_t kCopyGrain = 1 << 16;   // bytes
  static constexpr size_t kSampleGrain = 4;

  Plan plan_;
  StateLayout layout_;
  CpuMlp mlp_;
  std::unique_ptr<Collectives> collectives_;  // null with one process
  CpuFold fold_;
  OrderedReduction reduction_;  // over fold_ and collectives_
  std::vector<uint8_t> image_;  // canonical state image: params, count, mu, nu
  std::vector<float> inputs_;
  std::vector<int32_t> labels_;
  // The partials, [local shard][padded]: gradient, loss sum, zeros, and the
  // reduced vector; in own_partials_ and reduced_, or in the shared segment's
  // reduction area, whose readers check what they read (seals_).
  ReductionBuffers buffers_;
  SliceSeals* seals_ = nullptr;  // the segment's, when the reduction runs in it; else null
  std::vector<float> own_partials_, reduced_;
  std::vector<float> audit_partial_;  // [padded]: a partial the shard audit hashes (its copy or a recomputed shard)
  float last_loss_ = 0;
  std::string update_;  // "step S microbatch M" of the partials: names an update in errors
  double data_seconds_ = 0, compute_seconds_ = 0, collective_seconds_ = 0, optimizer_seconds_ = 0;
};

/// Threads of one rank (the GEMMs, and the element-wise data, fold and Adam
/// through trainer/cpu/cpu_parallel.h): DMLP_CPU_THREADS, else this process's CPUs
/// shared evenly by the job's ranks (all assumed on this host), at least one.
/// Measured with bench/train_bench on 2 cores, 1 rank: 2 threads 1.54 steps/s,
/// 1 thread 1.25 (the digest thread shares a core either way; under heavy
/// outside load OpenMP's barriers suffer more, so set DMLP_CPU_THREADS there).
/// The pinned BLIS kernel gives the same bits for any thread count
/// (bench/gemm_select), and so does the element-wise split, so this is a speed
/// choice only; it is in the fingerprint.
/// DMLP_CPU_THREADS above the CPUs this process may run on is capped there
/// with a warning: more threads than CPUs only make OpenMP's barriers spin
/// against each other (1024 threads on 2 CPUs did not finish 2 steps in 30 s).
Result<int> GemmThreads(const Plan& plan) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int available = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  if (std::getenv("DMLP_CPU_THREADS") != nullptr) {
    DMLP_ASSIGN_OR_RETURN(int64_t threads,
                          RequireInteger(Environment::FromProcess(), "DMLP_CPU_THREADS", 1, 1024));
    if (threads <= available || available < 1) return static_cast<int>(threads);
    std::fprintf(stderr,
                 "dmlp-train: warning: DMLP_CPU_THREADS=%lld is more than the %d CPUs this rank "
                 "may use; using %d\n",
                 static_cast<long long>(threads), available, available);
    return available;
  }
  return std::max<int>(1, available / static_cast<int>(plan.num_processes));
}

}  // namespace

Result<std::unique_ptr<Backend>> CreateCpuBackend(const Plan& plan, const StateLayout& layout,
                                                  Rendezvous& rendezvous) {
  DMLP_ASSIGN_OR_RETURN(int threads, GemmThreads(plan));
  DMLP_RETURN_IF_ERROR(InitCpuGemm(threads, plan.cpu_gemm));
  SetCpuParallelThreads(threads);
  DMLP_ASSIGN_OR_RETURN(CpuMlp mlp, CpuMlp::Create(layout, plan.shard_size()));
  std::unique_ptr<Collectives> collectives;
  if (plan.num_processes > 1) {
    // With shared memory the ordered reduction runs in the segment's
    // reduction area (ReductionTransport::Area); the sums of
    // REDUCTION=allreduce are Gloo's.
    SharedSizes sizes;
    if (plan.reduction == Reduction::kOrdered) {
      const ReductionLayout reduction = ReductionFor(plan, layout);
      sizes.partial_floats = reduction.shards_per_rank * reduction.padded_length();
      sizes.reduced_floats = reduction.padded_length();
      sizes.slice_floats = reduction.slice_length();
    }
    DMLP_ASSIGN_OR_RETURN(collectives, ConnectCpuCollectives(rendezvous, plan.cpu_transport, sizes));
  }
  return std::unique_ptr<Backend>(
      new CpuBackend(plan, layout, std::move(mlp), std::move(collectives)));
}

}  // namespace dmlp
