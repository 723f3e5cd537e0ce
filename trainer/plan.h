// defines: Plan, Platform, Reduction, MatmulPrecision, CollectivesKind, GemmKind, ReadPlan, LoadConfigFile,
//          PlanFingerprint, BitsFingerprint, PlanDocument
//
// One rank's configuration, read strictly from the environment (docs/configuration.md), optionally under a YAML file whose lower-case keys supply
// defaults that the environment overrides. Every rank must derive the same
// plan except for its own identity; PlanFingerprint() is what rendezvous compares.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/env.h"
#include "common/rank_place.h"
#include "common/state_layout.h"
#include "common/status.h"
#include "trainer/cpu_gemm_choice.h"
#include "trainer/cpu_transport.h"

namespace dmlp {

enum class Platform { kCpu, kCuda };
enum class Reduction { kOrdered, kAllreduce };
enum class MatmulPrecision { kFp32, kTf32 };
enum class CollectivesKind { kNccl, kGloo };
enum class GemmKind { kOrdered, kCublas };

const char* PlatformName(Platform platform);
const char* ReductionName(Reduction reduction);
const char* MatmulPrecisionName(MatmulPrecision precision);
const char* CollectivesName(CollectivesKind collectives);
const char* GemmName(GemmKind gemm);

/// AUDIT_EVERY when unset: the cost stays under 2 % (docs/reliability.md "Shard audit").
inline constexpr int64_t kDefaultAuditEvery = 200;

struct Plan {
  int64_t steps = 0;           // logged steps (receipts)
  int64_t seed = 0;            // 0 .. 2^32-1 (jax.random.key's 32 bits)
  int64_t batch = 0;           // global samples per optimizer update
  int64_t microbatches = 0;    // optimizer updates per logged step
  double learning_rate = 0;    // Adam step size (used as float32, as optax does)
  std::string out_dir;         // absolute path
  Platform platform = Platform::kCpu;
  int64_t num_processes = 0;   // world size
  int64_t process_id = 0;      // this rank
  int64_t local_rank = 0;      // device index on this host (LOCAL_RANK, default PROCESS_ID)
  std::string coordinator_address = "127.0.0.1";
  int64_t coordinator_port = 0;
  // Which launcher gave the four fields above (common/rank_place.h); never
  // part of PlanFingerprint or PlanDocument, so it cannot change a receipt.
  PlaceSource place_source = PlaceSource::kDmlp;
  std::string coordinator_from = "default";
  ModelShape model;
  int64_t heartbeat_timeout_seconds = 0;
  int64_t data_shards = 0;     // default NUM_PROCESSES
  MatmulPrecision matmul_precision = MatmulPrecision::kFp32;
  Reduction reduction = Reduction::kOrdered;
  // PLATFORM=cuda only (COLLECTIVES): NCCL, or Gloo staged through host memory
  // so that several ranks can share a GPU. The CPU platform always uses Gloo.
  CollectivesKind collectives = CollectivesKind::kNccl;
  // GEMM: dmlp's ordered SGEMM, whose every element is the CPU platform's FMA
  // chain (trainer/cpu/ordered_sgemm.h's ORDER RULE) on any GPU, or cuBLAS,
  // faster but with an order of its own. The CPU platform always computes
  // `ordered` (or BLIS's order with DMLP_CPU_GEMM=blis).
  GemmKind gemm = GemmKind::kOrdered;
  int64_t checkpoint_every = 0;  // 0: off
  bool resume = false;
  std::string job_id;          // which job this rank belongs to (job_identity.h); not in the fingerprint
  std::string job_id_source;   // the variable it came from
  // Steps hashed at once (DIGEST_THREADS); 0: DefaultDigestThreads. Per rank
  // and never changes a byte (common/bit_settings.h says which settings do).
  int64_t digest_threads = 0;
  // DIVERGENCE_CHECK=on|off (trainer/checks/divergence_check.h): compare every rank's
  // digest at every step. In PlanFingerprint only when off (ranks must agree);
  // never changes a byte, so not in PlanDocument.
  bool divergence_check = true;
  // AUDIT_EVERY (trainer/checks/shard_audit.h): every this many updates one shard is
  // computed twice, by its owner and by a second rank; 0 is off. Ranks must
  // agree (in PlanFingerprint when not the default), but it never changes a
  // byte of any file, so it is not in result.json.
  int64_t audit_every = kDefaultAuditEvery;
  // DMLP_CPU_GEMM (trainer/cpu_gemm_choice.h), PLATFORM=cpu: which GEMM; its order is
  // in PlanFingerprint as the GEMM order (ranks must add alike), the kernel is not.
  CpuGemm cpu_gemm = CpuGemm::kAuto;
  // DMLP_CPU_TRANSPORT (trainer/cpu/collectives_shm.h), PLATFORM=cpu: how the
  // ranks move bytes; never a bit. In PlanFingerprint when not auto.
  CpuTransport cpu_transport = CpuTransport::kAuto;

  int64_t shard_size() const { return batch / data_shards; }
  int64_t shards_per_rank() const { return data_shards / num_processes; }
  int64_t first_shard() const { return process_id * shards_per_rank(); }
  /// Whether the shard audit runs: AUDIT_EVERY > 0 and a second rank to recompute a shard.
  bool audits() const { return audit_every > 0 && num_processes > 1; }
};

/// Reads and cross-checks a plan (ENV_MISSING / ENV_EMPTY / ENV_INVALID ...).
Result<Plan> ReadPlan(const Environment& env);
/// Reads a YAML mapping of lower-case keys (steps: 10, ...) into upper-case names.
/// CONFIG_INVALID for unreadable files, non-mappings, unknown keys or non-scalar values.
Result<Environment> LoadConfigFile(const std::string& path);
/// Everything all ranks must agree on (not the rank's own identity), as "key=value" lines:
/// every plan row of common/bit_settings.h.
std::string PlanFingerprint(const Plan& plan);
/// The lines of PlanFingerprint that decide the receipts' bits under the plan's
/// REDUCTION and GEMM (bit_settings.h): what a checkpoint must share with the run
/// that resumes it, whichever platform wrote it.
std::string BitsFingerprint(const Plan& plan);
/// The `plan` object of result.json.
nlohmann::json PlanDocument(const Plan& plan);

}  // namespace dmlp
