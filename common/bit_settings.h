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
//     row that decides no bit under the runs' REDUCTION.
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
  kNever,          // never a bit: a resume may change it, --against ignores it
};

enum class Setting {
  kVersion, kSteps, kSeed, kBatch, kMicrobatches, kLearningRate, kPlatform, kNumProcesses,
  kFeatures, kWidth, kLayers, kClasses, kHeartbeat, kDataShards, kMatmulPrecision, kReduction,
  kDataDefinition, kCollectives, kCheckpointEvery, kResume, kDivergenceCheck, kAuditEvery,
  kCpuGemmOrder, kCpuTransport, kGemm,
  // Not compared between ranks (no plan_key):
  kOutDir, kCoordinatorPort, kProcessId, kDigestThreads, kCpuThreads, kImageId, kNcclVariables,
  kCpuGemmKernel,
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
  {Setting::kPlatform,           "PLATFORM",                  "platform",                  Bits::kAlways,        "plan.platform"},
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
  // The CPU GEMM's accumulation order (trainer/cpu/gemm_cpu.h, CpuGemmOrder): dmlp's
  // one FMA chain per element in increasing k whatever the kernel, or BLIS's
  // sub-configuration with DMLP_CPU_GEMM=blis. A line on PLATFORM=cpu only.
  {Setting::kCpuGemmOrder,       "DMLP_CPU_GEMM order",       "cpu_gemm_order",            Bits::kAlways,        "fingerprint.blas.kernel"},
  // How the CPU platform's ranks move bytes (trainer/cpu/collectives_shm.h):
  // shared memory on one host or Gloo's TCP. The sums stay Gloo's either way.
  {Setting::kCpuTransport,       "DMLP_CPU_TRANSPORT",        "cpu_transport",             Bits::kNever,         "fingerprint.transport"},
  // The CUDA platform's GEMM (GEMM, trainer/cuda/device_gemm.h): dmlp's ordered
  // chains or cuBLAS's order. A line on PLATFORM=cuda only.
  {Setting::kGemm,               "GEMM",                      "gemm",                      Bits::kAlways,        "plan.gemm fingerprint.gemm.kind"},
  // Add plan rows here (see the top of this file).
  {Setting::kOutDir,             "OUT_DIR",                   "",                          Bits::kNever,         "plan.out_dir"},
  {Setting::kCoordinatorPort,    "COORDINATOR_PORT",          "",                          Bits::kNever,         "model.port"},
  {Setting::kProcessId,          "PROCESS_ID",                "",                          Bits::kNever,         "model.process_id"},
  {Setting::kDigestThreads,      "DIGEST_THREADS",            "",                          Bits::kNever,         ""},
  {Setting::kCpuThreads,         "DMLP_CPU_THREADS",          "",                          Bits::kNever,         "fingerprint.blas.threads"},
  {Setting::kImageId,            "DMLP_IMAGE_ID",             "",                          Bits::kNever,         "build.image_id"},  // names a file, not the bits
  {Setting::kNcclVariables,      "NCCL_*",                    "",                          Bits::kWithAllreduce, "fingerprint.nccl_env.*"},  // transports, algorithms
  // Which of dmlp's kernels ran (avx512, avx2, scalar): all give the order's bits.
  {Setting::kCpuGemmKernel,      "DMLP_CPU_GEMM kernel",      "",                          Bits::kNever,         "fingerprint.blas.isa"},
};
// clang-format on

/// Whether a setting of `bits` decides the receipts under the given reduction.
constexpr bool DecidesBits(Bits bits, bool allreduce) {
  return bits == Bits::kAlways || (bits == Bits::kWithAllreduce && allreduce);
}

/// The result.json fields of every row that decides no bit under the reduction ("a.*" for a subtree).
std::vector<std::string> BitFreeResultFields(bool allreduce);
/// The result.json fields of every row for which `wanted` holds, in table order.
std::vector<std::string> ResultFieldsOf(const std::function<bool(const SettingRow&)>& wanted);

}  // namespace dmlp
