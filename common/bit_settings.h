// defines: Bits, Setting, SettingRow, kSettings, DecidesBits, BitFreeResultFields, ResultFieldsOf
//
// THE table of what decides the bits of a run's receipts. Three things are
// derived from it, and nothing else lists settings for them:
//   - PlanFingerprint (trainer/plan.cc): every row with a plan_key, the plan
//     every rank must agree on at rendezvous;
//   - CheckpointFingerprint (trainer/output/checkpoint.cc): the rows with a
//     plan_key that decide the bits under the plan's REDUCTION; a resume is
//     refused when one of them differs and accepted whatever the others are;
//   - the fields `dmlp-verify --against` ignores when it decides whether two
//     runs must match (verify/comparability.cc): the result_fields of every
//     row that decides no bit under the runs' REDUCTION and GEMM.
//
// PlanFingerprint mixes two questions: what ranks must agree on to work
// together at all (PLATFORM: a CPU rank and a CUDA rank share no collective)
// and what decides bits. `bits` answers only the second; PLATFORM decides no
// bit by itself: what the platforms compute differently is in the GEMM
// order's row (the CPU's dmlp kernels and CUDA's GEMM=ordered add the same
// chains) and in the rows that decide bits with cuBLAS only.
//
// To add a setting: one enumerator in Setting, one row below (the compiler
// then asks trainer/plan.cc, SettingValue, how to print its value). A row's
// place in the table is its line's place in the fingerprints: add new rows at
// the end of the plan rows, so the existing lines stay as they were.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dmlp {

/// When a setting decides the bits of the receipts.
enum class Bits {
  kAlways,         // another value gives other receipts
  kWithAllreduce,  // only with REDUCTION=allreduce, where a library's sum adds across
                   // ranks; REDUCTION=ordered adds in dmlp's own code in shard order
  kWithCublas,     // only where a run's GEMMs are cuBLAS's (GEMM=cublas), which picks its
                   // kernels by GPU model, SM count, library version and workspace;
                   // dmlp's own kernels give one result on every device
  kNever,          // never a bit: a resume may change it, --against ignores it
};

enum class Setting {
  kVersion, kSteps, kSeed, kBatch, kMicrobatches, kLearningRate, kPlatform, kNumProcesses,
  kFeatures, kWidth, kLayers, kClasses, kHeartbeat, kDataShards, kMatmulPrecision, kReduction,
  kDataDefinition, kCollectives, kCheckpointEvery, kResume, kDivergenceCheck, kAuditEvery,
  kGemmOrder, kCpuTransport,
  // Not compared between ranks (no plan_key):
  kOutDir, kCoordinatorPort, kProcessId, kDigestThreads, kCpuThreads, kImageId, kNcclVariables,
  kCheckpointKeep, kCpuGemmKernel, kGemm, kCublas, kDevice, kNcclLibrary, kCudaToolchain,
};

struct SettingRow {
  Setting setting;
  std::string_view name;           // as users set it
  std::string_view plan_key;       // its "key=value" line in PlanFingerprint; "": ranks need not agree
  Bits bits;
  std::string_view result_fields;  // where result.json records it, space-separated; "a.*": all of a
};

// clang-format off
inline constexpr SettingRow kSettings[] = {
  // setting                     name                         plan_key                     bits                  result.json
  {Setting::kVersion,            "dmlp version",              "dmlp_version",              Bits::kAlways,        "build.version"},
  {Setting::kSteps,              "STEPS",                     "steps",                     Bits::kNever,         "plan.steps"},  // a shorter run is a prefix
  {Setting::kSeed,               "SEED",                      "seed",                      Bits::kAlways,        "plan.seed"},
  {Setting::kBatch,              "BATCH",                     "batch",                     Bits::kAlways,        "plan.batch"},
  {Setting::kMicrobatches,       "MICROBATCHES",              "microbatches",              Bits::kAlways,        "plan.microbatches"},
  {Setting::kLearningRate,       "LEARNING_RATE",             "learning_rate",             Bits::kAlways,        "plan.learning_rate"},
  {Setting::kPlatform,           "PLATFORM",                  "platform",                  Bits::kNever,         "plan.platform fingerprint.platform"},  // see the top
  {Setting::kNumProcesses,       "NUM_PROCESSES",             "num_processes",             Bits::kWithAllreduce, "model.processes"},
  {Setting::kFeatures,           "FEATURES",                  "features",                  Bits::kAlways,        "model.features"},
  {Setting::kWidth,              "WIDTH",                     "width",                     Bits::kAlways,        "model.width"},
  {Setting::kLayers,             "LAYERS",                    "layers",                    Bits::kAlways,        "model.layers"},
  {Setting::kClasses,            "CLASSES",                   "classes",                   Bits::kAlways,        "model.classes"},
  {Setting::kHeartbeat,          "HEARTBEAT_TIMEOUT_SECONDS", "heartbeat_timeout_seconds", Bits::kNever,         "model.heartbeat_timeout_s"},
  {Setting::kDataShards,         "DATA_SHARDS",               "data_shards",               Bits::kAlways,        "plan.data_shards fingerprint.data_shards"},
  {Setting::kMatmulPrecision,    "MATMUL_PRECISION",          "matmul_precision",          Bits::kAlways,        "plan.matmul_precision fingerprint.matmul_precision"},
  {Setting::kReduction,          "REDUCTION",                 "reduction",                 Bits::kAlways,        "plan.reduction fingerprint.reduction"},
  {Setting::kDataDefinition,     "data definition",           "data_definition",           Bits::kAlways,        "plan.data_definition"},  // trainer/math/data_definition.h
  {Setting::kCollectives,        "COLLECTIVES",               "collectives",               Bits::kWithAllreduce, "plan.collectives fingerprint.collectives"},
  {Setting::kCheckpointEvery,    "CHECKPOINT_EVERY",          "checkpoint_every",          Bits::kNever,         "plan.checkpoint_every"},
  {Setting::kResume,             "RESUME",                    "resume",                    Bits::kNever,         "plan.resume"},
  {Setting::kDivergenceCheck,    "DIVERGENCE_CHECK",          "divergence_check",          Bits::kNever,         ""},
  {Setting::kAuditEvery,         "AUDIT_EVERY",               "audit_every",               Bits::kNever,         ""},
  // The GEMMs' accumulation order, on either platform: dmlp's one FMA chain per
  // element in increasing k (trainer/cpu/ordered_sgemm.h's ORDER RULE) for the
  // CPU's kernels (trainer/cpu/gemm_cpu.h, CpuGemmOrder) and CUDA's GEMM=ordered
  // alike, BLIS's sub-configuration with DMLP_CPU_GEMM=blis, cublas-fp32 or
  // cublas-tf32 with GEMM=cublas (whose kernels the kWithCublas rows pin).
  {Setting::kGemmOrder,          "GEMM order",                "gemm_order",                Bits::kAlways,        "plan.gemm_order"},
  // How the CPU platform's ranks move bytes (trainer/cpu/collectives_shm.h):
  // shared memory on one host or Gloo's TCP. The sums stay Gloo's either way.
  {Setting::kCpuTransport,       "DMLP_CPU_TRANSPORT",        "cpu_transport",             Bits::kNever,         "fingerprint.transport"},
  // Add plan rows here (see the top of this file).
  {Setting::kOutDir,             "OUT_DIR",                   "",                          Bits::kNever,         "plan.out_dir"},
  {Setting::kCoordinatorPort,    "COORDINATOR_PORT",          "",                          Bits::kNever,         "model.port"},
  {Setting::kProcessId,          "PROCESS_ID",                "",                          Bits::kNever,         "model.process_id"},
  {Setting::kDigestThreads,      "DIGEST_THREADS",            "",                          Bits::kNever,         ""},
  {Setting::kCpuThreads,         "DMLP_CPU_THREADS",          "",                          Bits::kNever,         "fingerprint.blas.threads"},
  {Setting::kImageId,            "DMLP_IMAGE_ID",             "",                          Bits::kNever,         "build.image_id"},  // names a file, not the bits
  {Setting::kNcclVariables,      "NCCL_*",                    "",                          Bits::kWithAllreduce, "fingerprint.nccl_env.*"},  // transports, algorithms
  // Which checkpoints stay on disk (trainer/output/checkpoint.h); rank 0 alone writes them.
  {Setting::kCheckpointKeep,     "CHECKPOINT_KEEP",           "",                          Bits::kNever,         ""},
  // Which of dmlp's kernels ran (avx512, avx2, scalar): all give the order's bits;
  // the library and its order are GEMM order's row.
  {Setting::kCpuGemmKernel,      "DMLP_CPU_GEMM kernel",      "",                          Bits::kNever,         "fingerprint.blas.isa fingerprint.blas.library fingerprint.blas.kernel fingerprint.blas.file"},
  // The CUDA platform's GEMM (trainer/cuda/device_gemm.h): its order is GEMM order's row.
  {Setting::kGemm,               "GEMM",                      "",                          Bits::kNever,         "plan.gemm fingerprint.gemm.kind"},
  {Setting::kCublas,             "cuBLAS library",            "",                          Bits::kWithCublas,    "fingerprint.gemm.version fingerprint.gemm.compute_type fingerprint.gemm.workspace_bytes fingerprint.cuda_env.*"},
  // The processor: its model and driver (rank-<r>.env.jsonl's device too). dmlp's
  // kernels and BLIS pinned to a sub-configuration compute alike on every one.
  {Setting::kDevice,             "device",                    "",                          Bits::kWithCublas,    "fingerprint.device.* fingerprint.cuda_driver fingerprint.cuda_runtime fingerprint.cpu device.*"},
  {Setting::kNcclLibrary,        "NCCL library",              "",                          Bits::kWithAllreduce, "fingerprint.nccl build.nccl_header"},
  // The nvcc that compiled dmlp's kernels and for which GPUs: they use explicitly
  // rounded operations alone (--fmad=false, no approximate instruction: the
  // simulator's PTX checks), so any nvcc computes their bits; cuBLAS comes with
  // the toolkit and picks its kernels by architecture.
  {Setting::kCudaToolchain,      "CUDA toolkit",              "",                          Bits::kWithCublas,    "build.cuda_toolkit build.cuda_compiler build.cuda_architectures"},
};
// clang-format on

/// Whether a setting of `bits` decides the receipts under the given reduction
/// and GEMM (`cublas`: GEMM=cublas in the run, or in either of two runs compared).
constexpr bool DecidesBits(Bits bits, bool allreduce, bool cublas) {
  return bits == Bits::kAlways || (bits == Bits::kWithAllreduce && allreduce) ||
         (bits == Bits::kWithCublas && cublas);
}

/// The result.json fields of every row that decides no bit under the reduction
/// and GEMM ("a.*" for a subtree).
std::vector<std::string> BitFreeResultFields(bool allreduce, bool cublas);
/// The result.json fields of every row for which `wanted` holds, in table order.
std::vector<std::string> ResultFieldsOf(const std::function<bool(const SettingRow&)>& wanted);

}  // namespace dmlp
