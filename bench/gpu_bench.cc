// gpu_bench: what one update of the CUDA platform costs against what the GPU
// can do, measured in the same run (the CUDA platform's benchmark):
//   - the cuBLAS SGEMM rate (8192^3, fp32 and tf32 compute types) and the
//     GEMM floor of an update = its GEMM FLOPs / that rate;
//   - the time of the update's own GEMM sequence alone (same shapes, same handle);
//   - the time per update of the real backend (1 rank), and its split by phase;
//   - the digest pipeline: device->pinned copy rate, SHA-256 rate, and the time
//     per logged step with and without the pipelined digest.
// Output: `<precision>.<name>=<value>` lines on stdout (tests/gpu/ parses them).
// --digest-sweep measures only the digest, against its hasher count K = 1, 2,
// 4, 8 (the GPU kit's "digest threads" row): the host's SHA-256 rate for one pipeline
// and for 8 at once (bench/digest_sweep.h), and the fp32 step time of the GPU
// job with and without the digest at each K; `digest_sweep ...` lines
// (tests/gpu/digest_row.sh reads them).
// --ordered-gemm measures only dmlp's ordered SGEMM (the CPU platform's bits,
// GEMM=ordered) beside cuBLAS fp32 and tf32 at the update's shapes, with the
// floor of each at the GPU's FP32 peak (the kit's "ordered gemm" row).
// It prints figures; it asserts nothing (STYLE: no timing assertions).
#include <arpa/inet.h>
#include <cuda_runtime_api.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/digest_sweep.h"
#include "common/format/error_codes.h"
#include "common/sha256.h"
#include "trainer/backend.h"
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/gemm_cublas.h"
#include "trainer/cuda/ordered_sgemm.h"
#include "trainer/math/init.h"
#include "trainer/output/digest_pipeline.h"
#include "trainer/plan.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  ModelShape model{512, 2048, 3, 10};
  int64_t batch = 4096;
  int64_t microbatches = 8;
  int64_t data_shards = 1;
  int64_t steps = 20;  // logged steps per measurement (after one warm-up step); >= 3
  std::string precision = "both";
  int64_t digest_threads = 0;  // 0: the trainer's default for this host, one rank
  bool digest_sweep = false;   // only the digest, against K (see the top)
  bool ordered_gemm = false;   // only the ordered SGEMM beside cuBLAS (OrderedGemmFigures)
  // The jobs' GEMM (GEMM=): cublas by default, so that the update is compared
  // with the cuBLAS floor it can reach; tf32 is cuBLAS's alone.
  std::string gemm = "cublas";
};

void Print(const std::string& precision, const char* name, double value) {
  std::printf("%s.%s=%.6g\n", precision.c_str(), name, value);
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) close(fd);
    return 29500;
  }
  close(fd);
  return ntohs(address.sin_port);
}

/// Milliseconds per call of `body` on `stream`, timed with events over `calls` calls.
Result<double> TimeOnStream(cudaStream_t stream, int calls, const std::function<Status()>& body) {
  DMLP_RETURN_IF_ERROR(body());  // warm-up (heuristics, lazy loading)
  DMLP_ASSIGN_OR_RETURN(cuda::CudaEvent start, cuda::CudaEvent::Create(true));
  DMLP_ASSIGN_OR_RETURN(cuda::CudaEvent stop, cuda::CudaEvent::Create(true));
  CUDA_CHECK(cudaEventRecord(start.get(), stream));
  for (int call = 0; call < calls; ++call) DMLP_RETURN_IF_ERROR(body());
  CUDA_CHECK(cudaEventRecord(stop.get(), stream));
  CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float milliseconds = 0;
  CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()));
  return milliseconds / calls;
}

/// `count` floats uniform in [-1, 1) from `seed`, in device memory. GEMM timings run on
/// these rather than on zeros: a tensor-core GEMM on zeros toggles fewer bits, draws less
/// power and holds higher clocks, so it runs faster (about 13 % for bf16 on the H200,
/// device/KINDS.md) and would flatter the floor that the update is compared with.
Result<cuda::DeviceBuffer<float>> RandomDeviceBuffer(size_t count, uint64_t seed) {
  std::vector<float> host(count);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& value : host) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;  // 64-bit LCG (Knuth)
    value = static_cast<float>(state >> 40) * 0x1p-23f - 1.0f;        // 24 high bits -> [-1, 1)
  }
  DMLP_ASSIGN_OR_RETURN(auto buffer, cuda::DeviceBuffer<float>::Create(count));
  CUDA_CHECK(cudaMemcpy(buffer.get(), host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  return buffer;
}

/// The SGEMM rate in FLOP/s for square n x n x n products of random matrices.
Result<double> SquareGemmRate(const cuda::CublasGemm& gemm, cudaStream_t stream, int n) {
  const size_t floats = size_t(n) * n;
  DMLP_ASSIGN_OR_RETURN(auto a, RandomDeviceBuffer(floats, 1));
  DMLP_ASSIGN_OR_RETURN(auto b, RandomDeviceBuffer(floats, 2));
  DMLP_ASSIGN_OR_RETURN(auto c, cuda::DeviceBuffer<float>::Create(floats, true));
  DMLP_ASSIGN_OR_RETURN(const double ms, TimeOnStream(stream, 5, [&] {
                          return gemm.Sgemm(false, false, n, n, n, a.get(), n, b.get(), n, c.get(),
                                            n);
                        }));
  return 2.0 * n * n * double(n) / (ms / 1000.0);
}

/// The update's GEMMs alone, in the backend's order and shapes (mlp_cuda.cc); and their FLOPs.
Result<double> UpdateGemmMilliseconds(const cuda::CublasGemm& gemm, cudaStream_t stream,
                                      const StateLayout& layout, int64_t shard_size, int64_t shards,
                                      double* flops) {
  int64_t widest = layout.shape().features;
  for (int64_t layer = 0; layer < layout.dense_count(); ++layer)
    widest = std::max(widest, layout.fan_out(layer));
  // Random operands, like the floor's (see RandomDeviceBuffer); outputs are overwritten.
  DMLP_ASSIGN_OR_RETURN(auto x, RandomDeviceBuffer(size_t(shard_size * widest), 3));
  DMLP_ASSIGN_OR_RETURN(auto d, RandomDeviceBuffer(size_t(shard_size * widest), 4));
  DMLP_ASSIGN_OR_RETURN(auto y, RandomDeviceBuffer(size_t(shard_size * widest), 5));
  DMLP_ASSIGN_OR_RETURN(auto w, RandomDeviceBuffer(size_t(widest * widest), 6));
  const int n = static_cast<int>(shard_size);
  *flops = 0;
  auto sequence = [&]() -> Status {
    for (int64_t shard = 0; shard < shards; ++shard) {
      for (int64_t layer = 0; layer < layout.dense_count(); ++layer) {
        const int in = int(layout.fan_in(layer)), out = int(layout.fan_out(layer));
        DMLP_RETURN_IF_ERROR(
            gemm.Sgemm(false, false, n, out, in, x.get(), in, w.get(), out, y.get(), out));
      }
      for (int64_t layer = layout.dense_count() - 1; layer >= 0; --layer) {
        const int in = int(layout.fan_in(layer)), out = int(layout.fan_out(layer));
        DMLP_RETURN_IF_ERROR(
            gemm.Sgemm(true, false, in, out, n, x.get(), in, d.get(), out, w.get(), out));
        if (layer > 0)
          DMLP_RETURN_IF_ERROR(
              gemm.Sgemm(false, true, n, in, out, d.get(), out, w.get(), out, y.get(), in));
      }
    }
    return Status::Ok();
  };
  for (int64_t layer = 0; layer < layout.dense_count(); ++layer)
    *flops += 2.0 * double(shard_size) * layout.fan_in(layer) * layout.fan_out(layer) *
              (layer == 0 ? 2 : 3) * double(shards);
  return TimeOnStream(stream, 10, sequence);
}

/// The GPU's FP32 peak in FLOP/s: SMs x FP32 lanes per SM x 2 (an FMA) x the
/// SM clock. 128 lanes per SM on sm_86 and later (sm_89, sm_90), 64 on sm_80 and
/// before Ampere's consumer parts; the boost clock the driver reports, so the
/// floor is a lower bound.
Result<double> Fp32PeakFlops() {
  int device = 0, sms = 0, kilohertz = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&kilohertz, cudaDevAttrClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const int lanes = (major > 8 || (major == 8 && minor >= 6)) ? 128 : 64;
  return double(sms) * lanes * 2.0 * double(kilohertz) * 1e3;
}

/// One GEMM of an update: row-major C[m x n] = op(A)[m x k] op(B)[k x n].
struct UpdateGemm {
  std::string name;  // "layer0.forward", "layer2.weight_grad", "layer1.input_grad"
  bool transpose_a, transpose_b;
  int m, n, k;
};

/// The update's GEMMs in the backend's order (as UpdateGemmMilliseconds runs them, one shard).
std::vector<UpdateGemm> UpdateGemms(const StateLayout& layout, int64_t shard_size) {
  std::vector<UpdateGemm> gemms;
  const int rows = static_cast<int>(shard_size);
  for (int64_t layer = 0; layer < layout.dense_count(); ++layer) {
    const int in = int(layout.fan_in(layer)), out = int(layout.fan_out(layer));
    const std::string prefix = "layer" + std::to_string(layer) + ".";
    gemms.push_back({prefix + "forward", false, false, rows, out, in});
    gemms.push_back({prefix + "weight_grad", true, false, in, out, rows});
    if (layer > 0) gemms.push_back({prefix + "input_grad", false, true, rows, in, out});
  }
  return gemms;
}

/// --ordered-gemm: dmlp's ordered SGEMM (trainer/cuda/ordered_sgemm.h, the
/// bits of the CPU platform) beside cuBLAS fp32 and tf32 at the update's own
/// shapes, in the same run: per GEMM and in total, ms per call, GFLOP/s, the
/// ratio to cuBLAS fp32, and the floor (FLOPs / the FP32 peak). Lines
/// `ordered_gemm name=... key=value...` and `ordered_gemm_total ...`.
Status OrderedGemmFigures(const BenchOptions& options) {
  DMLP_ASSIGN_OR_RETURN(StateLayout layout, StateLayout::Create(options.model));
  const int64_t shard_size = options.batch / options.data_shards;
  DMLP_ASSIGN_OR_RETURN(cuda::CudaStream stream, cuda::CudaStream::Create());
  DMLP_ASSIGN_OR_RETURN(auto fp32, cuda::CublasGemm::Create(stream.get(), /*tf32=*/false));
  DMLP_ASSIGN_OR_RETURN(auto tf32, cuda::CublasGemm::Create(stream.get(), /*tf32=*/true));
  DMLP_ASSIGN_OR_RETURN(const double peak, Fp32PeakFlops());
  std::printf("ordered_gemm_fp32_peak_tflops=%.3f\n", peak / 1e12);
  double total_flops = 0, total_ordered = 0, total_fp32 = 0, total_tf32 = 0;
  for (const UpdateGemm& g : UpdateGemms(layout, shard_size)) {
    // Random operands (see RandomDeviceBuffer); C is overwritten (beta 0).
    DMLP_ASSIGN_OR_RETURN(auto a, RandomDeviceBuffer(size_t(g.m) * g.k, 7));
    DMLP_ASSIGN_OR_RETURN(auto b, RandomDeviceBuffer(size_t(g.k) * g.n, 8));
    DMLP_ASSIGN_OR_RETURN(auto c, cuda::DeviceBuffer<float>::Create(size_t(g.m) * g.n, true));
    const int lda = g.transpose_a ? g.m : g.k, ldb = g.transpose_b ? g.k : g.n;
    DMLP_ASSIGN_OR_RETURN(const double ordered_ms, TimeOnStream(stream.get(), 5, [&] {
                            return cuda::OrderedSgemmCuda(g.transpose_a, g.transpose_b, g.m, g.n, g.k, 1.0f,
                                                          a.get(), lda, b.get(), ldb, 0.0f, c.get(), g.n,
                                                          GemmEpilogue::None(), stream.get());
                          }));
    double cublas_ms[2] = {};
    const cuda::CublasGemm* handles[2] = {&fp32, &tf32};
    for (int i = 0; i < 2; ++i) {
      DMLP_ASSIGN_OR_RETURN(cublas_ms[i], TimeOnStream(stream.get(), 5, [&] {
                              return handles[i]->Sgemm(g.transpose_a, g.transpose_b, g.m, g.n, g.k, a.get(),
                                                       lda, b.get(), ldb, c.get(), g.n);
                            }));
    }
    const double flops = 2.0 * g.m * double(g.n) * g.k;
    std::printf("ordered_gemm name=%s m=%d n=%d k=%d ordered_ms=%.4f ordered_gflops=%.1f cublas_fp32_ms=%.4f "
                "cublas_tf32_ms=%.4f ratio_to_cublas_fp32=%.2f floor_ms=%.4f\n",
                g.name.c_str(), g.m, g.n, g.k, ordered_ms, flops / ordered_ms / 1e6, cublas_ms[0], cublas_ms[1],
                ordered_ms / cublas_ms[0], flops / peak * 1e3);
    total_flops += flops;
    total_ordered += ordered_ms;
    total_fp32 += cublas_ms[0];
    total_tf32 += cublas_ms[1];
  }
  std::printf("ordered_gemm_total gflop=%.2f ordered_ms=%.3f ordered_gflops=%.1f cublas_fp32_ms=%.3f "
              "cublas_tf32_ms=%.3f ratio_to_cublas_fp32=%.2f floor_ms=%.3f\n",
              total_flops / 1e9, total_ordered, total_flops / total_ordered / 1e6, total_fp32, total_tf32,
              total_ordered / total_fp32, total_flops / peak * 1e3);
  return Status::Ok();
}

/// Seconds per logged step (MICROBATCHES updates + the loss), optionally with
/// digests, in the steady state: from the second step's end (its Submit) to the
/// last one's, so neither the first copy nor the last image's hash, which
/// Drain waits for after the last step, is in the figure. With the hash fully
/// overlapped the ratio with/without then approaches 1; divided over the whole
/// run the drain alone would add a hash per run. REQUIRES: options.steps >= 3.
Result<double> StepSeconds(Backend& backend, const BenchOptions& options, DigestPipeline* digests,
                           int64_t first_step) {
  Clock::time_point second_end{};
  for (int64_t step = first_step; step < first_step + options.steps; ++step) {
    for (int64_t microbatch = 0; microbatch < options.microbatches; ++microbatch)
      DMLP_RETURN_IF_ERROR(backend.Update(step, microbatch));
    DMLP_ASSIGN_OR_RETURN(const float loss, backend.LastLoss());
    if (digests != nullptr) DMLP_RETURN_IF_ERROR(digests->Submit(step, std::to_string(loss)));
    if (step == first_step + 1) second_end = Clock::now();
  }
  const double steady = Seconds(second_end) / double(options.steps - 2);
  if (digests != nullptr) DMLP_RETURN_IF_ERROR(digests->Drain());  // not timed (see above)
  return steady;
}

/// One step's seconds, untimed in effect: the warm-up (lazy loading, heuristics).
Status WarmUp(Backend& backend, const BenchOptions& options, int64_t step) {
  for (int64_t microbatch = 0; microbatch < options.microbatches; ++microbatch)
    DMLP_RETURN_IF_ERROR(backend.Update(step, microbatch));
  return backend.LastLoss().status();
}

/// A 1-rank CUDA job of the benchmark's plan, with its initial state loaded.
struct BenchJob {
  Plan plan;
  std::unique_ptr<Rendezvous> rendezvous;
  std::unique_ptr<Backend> backend;
};

Result<BenchJob> StartJob(const BenchOptions& options, MatmulPrecision precision,
                          const StateLayout& layout) {
  BenchJob job;
  Plan& plan = job.plan;
  plan.steps = 1 + 2 * options.steps;
  plan.seed = 42;
  plan.batch = options.batch;
  plan.microbatches = options.microbatches;
  plan.learning_rate = 1e-3;
  plan.platform = Platform::kCuda;
  plan.num_processes = 1;
  plan.heartbeat_timeout_seconds = 60;
  plan.model = options.model;
  plan.data_shards = options.data_shards;
  plan.matmul_precision = precision;
  plan.gemm = options.gemm == "ordered" && precision == MatmulPrecision::kFp32 ? GemmKind::kOrdered
                                                                              : GemmKind::kCublas;
  plan.digest_threads = options.digest_threads;

  RendezvousOptions rendezvous_options;
  rendezvous_options.port = FreePort();
  rendezvous_options.heartbeat_timeout_seconds = 60;
  rendezvous_options.plan_fingerprint = PlanFingerprint(plan);
  DMLP_ASSIGN_OR_RETURN(job.rendezvous, Rendezvous::Join(rendezvous_options));
  DMLP_ASSIGN_OR_RETURN(job.backend, CreateCudaBackend(plan, layout, *job.rendezvous));
  std::vector<uint8_t> initial(layout.image_bytes(), 0);
  DMLP_RETURN_IF_ERROR(InitParams(layout, 42, reinterpret_cast<float*>(initial.data())));
  DMLP_RETURN_IF_ERROR(job.backend->LoadState(initial.data()));
  return job;
}

/// A digest pipeline of `threads` hashers whose sink discards the digests.
DigestPipeline DiscardingPipeline(Backend& backend, const StateLayout& layout, int threads) {
  return DigestPipeline(
      backend, layout.image_bytes(),
      [](int64_t, const std::string&, const std::string&, const uint8_t*) { return Status::Ok(); },
      threads);
}

Status BenchPrecision(const BenchOptions& options, MatmulPrecision precision_value) {
  const std::string precision = precision_value == MatmulPrecision::kTf32 ? "tf32" : "fp32";
  DMLP_ASSIGN_OR_RETURN(StateLayout layout, StateLayout::Create(options.model));
  DMLP_ASSIGN_OR_RETURN(BenchJob job, StartJob(options, precision_value, layout));
  const Plan& plan = job.plan;
  Backend* backend = job.backend.get();
  Rendezvous* rendezvous = job.rendezvous.get();

  {  // GEMM rates with the backend's precision, on a handle of its own.
    DMLP_ASSIGN_OR_RETURN(cuda::CudaStream stream, cuda::CudaStream::Create());
    DMLP_ASSIGN_OR_RETURN(auto gemm, cuda::CublasGemm::Create(stream.get(), precision == "tf32"));
    DMLP_ASSIGN_OR_RETURN(const double rate, SquareGemmRate(gemm, stream.get(), 8192));
    double flops = 0;
    DMLP_ASSIGN_OR_RETURN(const double gemm_ms,
                          UpdateGemmMilliseconds(gemm, stream.get(), layout, plan.shard_size(),
                                                 plan.data_shards, &flops));
    Print(precision, "sgemm_8192_tflops", rate / 1e12);
    Print(precision, "update_gemm_gflop", flops / 1e9);
    Print(precision, "floor_update_ms", flops / rate * 1e3);
    Print(precision, "update_gemms_only_ms", gemm_ms);
  }

  // Warm-up step, then the timed steps without and with the digest pipeline.
  DMLP_RETURN_IF_ERROR(WarmUp(*backend, options, 1));
  const nlohmann::json before = backend->Profile();
  DMLP_ASSIGN_OR_RETURN(const double plain, StepSeconds(*backend, options, nullptr, 2));
  const nlohmann::json after = backend->Profile();
  DigestPipeline digests = DiscardingPipeline(*backend, layout, DigestThreadsFor(plan));
  DMLP_RETURN_IF_ERROR(digests.Start());
  DMLP_ASSIGN_OR_RETURN(const double digested,
                        StepSeconds(*backend, options, &digests, 2 + options.steps));
  // The profile covers every step of the plain run (not only the steady ones).
  const double updates = double(options.steps * options.microbatches);
  Print(precision, "update_ms", plain / double(options.microbatches) * 1e3);
  for (const char* phase : {"data", "compute", "collectives", "optimizer"})
    Print(precision, (std::string("update_") + phase + "_ms").c_str(),
          (after[phase].get<double>() - before[phase].get<double>()) / updates * 1e3);
  std::printf("%s.gemm=%s\n", precision.c_str(), GemmName(plan.gemm));
  Print(precision, "step_ms", plain * 1e3);
  Print(precision, "step_with_digest_ms", digested * 1e3);
  Print(precision, "digest_overhead_pct", (digested / plain - 1) * 100);
  Print(precision, "digest_threads", digests.hasher_threads());
  Print(precision, "hash_ms_per_step", digests.hash_seconds() / double(options.steps) * 1e3);

  // The two halves of a digest on their own: the copy and the hash.
  DMLP_ASSIGN_OR_RETURN(SnapshotBuffer buffer, backend->AllocateSnapshotBuffer());
  const Clock::time_point copy_start = Clock::now();
  for (int copy = 0; copy < 5; ++copy) {
    DMLP_ASSIGN_OR_RETURN(SnapshotWaiter waiter, backend->BeginSnapshot(buffer.get()));
    DMLP_RETURN_IF_ERROR(waiter());
  }
  const double gb = double(layout.image_bytes()) / 1e9;
  Print(precision, "image_gb", gb);
  Print(precision, "snapshot_copy_gb_per_s", 5 * gb / Seconds(copy_start));
  const Clock::time_point hash_start = Clock::now();
  const std::string digest = Sha256Hex(buffer.get(), layout.image_bytes());
  (void)digest;  // computed for its time only
  Print(precision, "sha256_gb_per_s", gb / Seconds(hash_start));
  std::fprintf(stderr, "gpu_bench: %s fingerprint %s\n", precision.c_str(),
               backend->Fingerprint().dump().c_str());
  return rendezvous->Close();
}

/// --digest-sweep (see the top): per K, the GPU step with and without the
/// digest, then the host's rate for one pipeline and for kHostRanks at once.
Status DigestSweep(const BenchOptions& options) {
  DMLP_ASSIGN_OR_RETURN(StateLayout layout, StateLayout::Create(options.model));
  BenchOptions sweep = options;
  sweep.steps = std::max<int64_t>(options.steps, 3);
  DMLP_ASSIGN_OR_RETURN(BenchJob job, StartJob(sweep, MatmulPrecision::kFp32, layout));
  int64_t next_step = 1;
  DMLP_RETURN_IF_ERROR(WarmUp(*job.backend, sweep, next_step));
  next_step += 1;
  const size_t image = layout.image_bytes();
  std::printf("digest_sweep_default_threads=%d\n", DigestThreadsFor(job.plan));
  for (const int threads : bench::kSweepThreads) {
    // Without and with the digest back to back, so that clocks and load are alike.
    DMLP_ASSIGN_OR_RETURN(const double plain, StepSeconds(*job.backend, sweep, nullptr, next_step));
    next_step += sweep.steps;
    DigestPipeline digests = DiscardingPipeline(*job.backend, layout, threads);
    DMLP_RETURN_IF_ERROR(digests.Start());
    DMLP_ASSIGN_OR_RETURN(const double digested,
                          StepSeconds(*job.backend, sweep, &digests, next_step));
    next_step += sweep.steps;
    char gpu[160];
    std::snprintf(gpu, sizeof gpu, " gpu_step_ms=%.2f gpu_step_with_digest_ms=%.2f ratio=%.3f",
                  plain * 1e3, digested * 1e3, digested / plain);
    // At least 2K images per pipeline: with fewer, K hashers never all work at
    // once for long, and K=8 would measure what K=4 does.
    const int images = std::max(2 * threads, 4);
    DMLP_ASSIGN_OR_RETURN(const bench::HostDigestRate alone,
                          bench::MeasureHostDigest(image, threads, 1, images));
    std::printf("%s\n", bench::SweepLine(threads, image, 1, alone, gpu).c_str());
    DMLP_ASSIGN_OR_RETURN(const bench::HostDigestRate together,
                          bench::MeasureHostDigest(image, threads, bench::kHostRanks, images));
    std::printf("%s\n", bench::SweepLine(threads, image, bench::kHostRanks, together).c_str());
    std::fflush(stdout);
  }
  return job.rendezvous->Close();
}

int Main(int argc, char** argv) {
  BenchOptions options;
  CLI::App app{"gpu_bench: CUDA platform update time vs the cuBLAS floor, digest throughput"};
  app.add_option("--features", options.model.features)->check(CLI::PositiveNumber);
  app.add_option("--width", options.model.width)->check(CLI::PositiveNumber);
  app.add_option("--layers", options.model.layers)->check(CLI::NonNegativeNumber);
  app.add_option("--classes", options.model.classes)->check(CLI::PositiveNumber);
  app.add_option("--batch", options.batch)->check(CLI::PositiveNumber);
  app.add_option("--microbatches", options.microbatches)->check(CLI::PositiveNumber);
  app.add_option("--data-shards", options.data_shards)->check(CLI::PositiveNumber);
  app.add_option("--steps", options.steps, "logged steps per measurement (the first two untimed)")
      ->check(CLI::Range(int64_t{3}, int64_t{1} << 30));
  app.add_option("--digest-threads", options.digest_threads, "DIGEST_THREADS (default: the trainer's)")
      ->check(CLI::Range(1, 64));
  app.add_option("--precision", options.precision)->check(CLI::IsMember({"fp32", "tf32", "both"}));
  app.add_flag("--digest-sweep", options.digest_sweep,
               "only the digest: K = 1, 2, 4, 8 on the host (1 and 8 pipelines) and on the GPU step");
  app.add_option("--gemm", options.gemm, "the jobs' GEMM (tf32: always cublas)")
      ->check(CLI::IsMember({"ordered", "cublas"}));
  app.add_flag("--ordered-gemm", options.ordered_gemm,
               "only dmlp's ordered SGEMM beside cuBLAS fp32 and tf32 at the update's shapes");
  CLI11_PARSE(app, argc, argv);
  if (options.batch % options.data_shards != 0) {
    std::fprintf(stderr,
                 "gpu_bench: error: %s: --batch must be divisible by --data-shards\n", dmlp::kEnvInvalid);
    return 2;
  }
  if (options.digest_sweep || options.ordered_gemm) {
    const Status status = options.digest_sweep ? DigestSweep(options) : OrderedGemmFigures(options);
    if (!status.ok()) {
      std::fprintf(stderr, "gpu_bench: error: %s\n", status.ToString().c_str());
      return 1;
    }
    return 0;
  }
  for (const char* name : {"fp32", "tf32"}) {
    if (options.precision != "both" && options.precision != name) continue;
    const Status status = BenchPrecision(
        options, std::string(name) == "tf32" ? MatmulPrecision::kTf32 : MatmulPrecision::kFp32);
    if (!status.ok()) {
      std::fprintf(stderr, "gpu_bench: error: %s\n", status.ToString().c_str());
      return 1;
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace dmlp

int main(int argc, char** argv) { return dmlp::Main(argc, argv); }
