#include "trainer/plan.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <yaml-cpp/yaml.h>

#include "common/bit_settings.h"
#include "common/file_util.h"
#include "common/float_repr.h"
#include "common/number_grammar.h"
#include "common/format/error_codes.h"
#include "common/quote.h"
#include "trainer/checks/job_identity.h"
#include "trainer/math/data_definition.h"

namespace dmlp {
namespace {

// Every name a plan reads; the YAML file may give any of them in lower case.
constexpr const char* kPlanNames[] = {
    "STEPS", "SEED", "BATCH", "MICROBATCHES", "LEARNING_RATE", "OUT_DIR", "PLATFORM",
    "NUM_PROCESSES", "PROCESS_ID", "COORDINATOR_PORT", "COORDINATOR_ADDRESS", "FEATURES",
    "WIDTH", "LAYERS", "CLASSES", "HEARTBEAT_TIMEOUT_SECONDS", "DATA_SHARDS",
    "MATMUL_PRECISION", "REDUCTION", "CHECKPOINT_EVERY", "CHECKPOINT_KEEP", "RESUME", "DIGEST_THREADS",
    "COLLECTIVES", "DIVERGENCE_CHECK", "AUDIT_EVERY", "GEMM"};

Status Invalid(const std::string& detail) { return Status::Error(kEnvInvalid, detail); }

// An optional variable: absent gives the default; present must be valid (empty is ENV_EMPTY).
// REQUIRES: fallback may be nullptr, meaning the variable is required.
Result<std::string> OptionalString(const Environment& env, const char* name, const char* fallback) {
  if (fallback != nullptr && !env.Get(name)) return std::string(fallback);
  return RequireString(env, name);
}

Result<int64_t> OptionalInteger(const Environment& env, const char* name, int64_t fallback,
                                int64_t min, int64_t max = INT32_MAX) {
  if (!env.Get(name)) return fallback;
  return RequireInteger(env, name, min, max);
}

template <typename Enum, size_t N>
Result<Enum> Choice(const Environment& env, const char* name, const char* fallback,
                    const std::pair<const char*, Enum> (&choices)[N]) {
  DMLP_ASSIGN_OR_RETURN(std::string text, OptionalString(env, name, fallback));
  std::string allowed;
  for (const auto& [word, value] : choices) {
    if (text == word) return value;
    allowed += (allowed.empty() ? "" : " or ") + std::string(word);
  }
  return InvalidValue(env, name, "must be " + allowed);
}

Status ReadModel(const Environment& env, Plan& plan) {
  DMLP_ASSIGN_OR_RETURN(plan.model.features, RequireInteger(env, "FEATURES", 1));
  DMLP_ASSIGN_OR_RETURN(plan.model.width, RequireInteger(env, "WIDTH", 1));
  DMLP_ASSIGN_OR_RETURN(plan.model.layers, RequireInteger(env, "LAYERS", 1));
  DMLP_ASSIGN_OR_RETURN(plan.model.classes, RequireInteger(env, "CLASSES", 1));
  // Constant time: building the layout of LAYERS=2000000000 took 6 s and 2.9 GB.
  Status shape = StateLayout::CheckShape(plan.model);
  if (!shape.ok())
    return Invalid("FEATURES/WIDTH/LAYERS/CLASSES: " + shape.detail() +
                   FileSources(env, {"FEATURES", "WIDTH", "LAYERS", "CLASSES"}));
  return Status::Ok();
}

// Rank, world size, local rank and coordinator: from dmlp-launch's variables
// or from the engine that started the process (common/rank_place.h).
Status ReadPlace(const Environment& env, Plan& plan) {
  DMLP_ASSIGN_OR_RETURN(RankPlace place, ReadRankPlace(env));
  plan.num_processes = place.num_processes;
  plan.process_id = place.process_id;
  plan.local_rank = place.local_rank;
  plan.coordinator_address = place.coordinator_address;
  plan.coordinator_port = place.coordinator_port;
  plan.place_source = place.source;
  plan.coordinator_from = place.coordinator_from;
  return Status::Ok();
}

// The data and init are jax's (trainer/math/sample_math.h), whose key(SEED) keeps
// the low 32 bits in the reference's 32-bit mode: a larger SEED would silently
// repeat the experiment of SEED mod 2^32.
Status CheckSeed(const Environment& env, int64_t seed) {
  if (seed <= int64_t{0xFFFFFFFF}) return Status::Ok();
  return SettingError(env, "SEED", "=" + std::to_string(seed) +
                      " must be < 2^32 (4294967296): jax.random.key keeps its low 32 bits, so it "
                      "would repeat the experiment of SEED=" + std::to_string(seed & 0xFFFFFFFF));
}

// Rules between settings stay ENV_INVALID, naming the variables and, for
// those from a --config file, the file (FileSources).
Status CrossCheck(const Environment& env, const Plan& plan) {
  if (plan.batch % plan.num_processes != 0)
    return Invalid("BATCH must be divisible by NUM_PROCESSES" + FileSources(env, {"BATCH", "NUM_PROCESSES"}));
  if (plan.batch % plan.data_shards != 0)
    return Invalid("BATCH must be divisible by DATA_SHARDS" + FileSources(env, {"BATCH", "DATA_SHARDS"}));
  if (plan.data_shards % plan.num_processes != 0)
    return Invalid("DATA_SHARDS must be divisible by NUM_PROCESSES" +
                   FileSources(env, {"DATA_SHARDS", "NUM_PROCESSES"}));
  // TF32 is a cuBLAS compute type; the ordered kernel's chain is fp32 only.
  if (plan.matmul_precision == MatmulPrecision::kTf32 && plan.platform != Platform::kCuda)
    return Invalid("MATMUL_PRECISION=tf32 requires PLATFORM=cuda" +
                   FileSources(env, {"MATMUL_PRECISION", "PLATFORM"}));
  if (plan.matmul_precision == MatmulPrecision::kTf32 && plan.gemm != GemmKind::kCublas)
    return Invalid("MATMUL_PRECISION=tf32 requires GEMM=cublas (GEMM=ordered computes in fp32)" +
                   FileSources(env, {"MATMUL_PRECISION", "GEMM"}));
  if (plan.platform == Platform::kCpu && env.Get("GEMM") && plan.cpu_gemm == CpuGemm::kBlis)
    return Invalid("GEMM=ordered contradicts DMLP_CPU_GEMM=blis (BLIS adds in an order of its own)" +
                   FileSources(env, {"GEMM", "DMLP_CPU_GEMM"}));
  return Status::Ok();
}

// COLLECTIVES chooses between NCCL and Gloo on the CUDA platform; the CPU
// platform has only Gloo, so a setting there is a mistake worth naming.
Result<CollectivesKind> ReadCollectives(const Environment& env, Platform platform) {
  if (platform != Platform::kCuda) {
    if (env.Get("COLLECTIVES"))
      return SettingError(env, "COLLECTIVES", " applies to PLATFORM=cuda only (PLATFORM=cpu always uses gloo)");
    return CollectivesKind::kGloo;
  }
  return Choice(env, "COLLECTIVES", "nccl",
                {std::pair{"nccl", CollectivesKind::kNccl}, std::pair{"gloo", CollectivesKind::kGloo}});
}

// CHECKPOINT_KEEP: "all", "every:M" (M >= 1) or a count N >= 1 of newest
// checkpoints, each number in the one grammar (common/number_grammar.h).
Result<CheckpointKeep> ReadCheckpointKeep(const Environment& env) {
  DMLP_ASSIGN_OR_RETURN(std::string text, OptionalString(env, "CHECKPOINT_KEEP", "2"));
  if (text == "all") return CheckpointKeep{CheckpointKeep::Kind::kAll, 0};
  constexpr std::string_view kEvery = "every:";
  const bool every = text.rfind(kEvery, 0) == 0;
  Result<int64_t> count = ParseInteger(every ? text.substr(kEvery.size()) : text, 1, INT32_MAX);
  if (!count.ok()) return InvalidValue(env, "CHECKPOINT_KEEP", "must be all, every:M or a count N (M, N >= 1)");
  return CheckpointKeep{every ? CheckpointKeep::Kind::kEvery : CheckpointKeep::Kind::kNewest, *count};
}

// GEMM chooses the CUDA platform's GEMM. The CPU platform computes dmlp's
// ordered chains (or BLIS's, DMLP_CPU_GEMM=blis) and has no cuBLAS: GEMM=ordered
// is accepted there, so one configuration runs on both platforms, and
// GEMM=cublas is a mistake worth naming.
Result<GemmKind> ReadGemm(const Environment& env, Platform platform) {
  DMLP_ASSIGN_OR_RETURN(GemmKind gemm, Choice(env, "GEMM", "ordered",
                                              {std::pair{"ordered", GemmKind::kOrdered},
                                               std::pair{"cublas", GemmKind::kCublas}}));
  if (platform != Platform::kCuda && gemm == GemmKind::kCublas)
    return SettingError(env, "GEMM", "=cublas requires PLATFORM=cuda (PLATFORM=cpu computes GEMM=ordered)");
  return gemm;
}

Result<CpuTransport> ReadCpuTransport(const Environment& env, Platform platform) {
  if (platform != Platform::kCpu) {
    if (env.Get("DMLP_CPU_TRANSPORT"))
      return Invalid("DMLP_CPU_TRANSPORT applies to PLATFORM=cpu only");
    return CpuTransport::kAuto;
  }
  return Choice(env, "DMLP_CPU_TRANSPORT", "auto",
                {std::pair{"auto", CpuTransport::kAuto}, std::pair{"tcp", CpuTransport::kTcp},
                 std::pair{"shm", CpuTransport::kSharedMemory}});
}

// yaml-cpp's LoadFile reads the first document and drops the rest; a second
// one (a stray "---" and more settings) must not be ignored silently.
// REQUIRES: `text` is the whole file at `path` (read by LoadConfigFile, not by
// yaml-cpp: its file stream leaks its buffer when a read fails, and a read
// error is ours to name).
YAML::Node LoadOneDocument(const std::string& text) {
  std::vector<YAML::Node> documents = YAML::LoadAll(text);
  if (documents.size() > 1)
    throw YAML::ParserException(YAML::Mark::null_mark(),
                                "holds " + std::to_string(documents.size()) +
                                    " YAML documents (---); dmlp reads one");
  return documents.empty() ? YAML::Node() : documents.front();
}

// YAML lets only tab, LF and CR stand raw in a file; yaml-cpp took a raw NUL
// for a backslash instead ("seed: 4<NUL>x32" ran SEED=42, and "<NUL>u2028" in
// OUT_DIR made a U+2028, which the control-character rule below lets pass). So
// the bytes are checked before the parser sees them, naming where each is.
Status CheckRawControlBytes(const std::string& path, const std::string& text) {
  int64_t line = 1;
  for (size_t offset = 0; offset < text.size(); ++offset) {
    const unsigned char byte = static_cast<unsigned char>(text[offset]);
    if (byte == '\n') ++line;
    if (byte == '\t' || byte == '\n' || byte == '\r' || (byte >= 0x20 && byte != 0x7f)) continue;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", byte);
    return Status::Error(kConfigInvalid, path + ": line " + std::to_string(line) + ", byte offset " +
                                               std::to_string(offset) + ": the control byte " + hex +
                                               " (YAML allows only tab, LF and CR raw)");
  }
  return Status::Ok();
}

// A value is the text of a plain or quoted scalar. An explicit tag (`!!float 5`,
// `!!binary ...`) asks for a type dmlp would not apply (it reads text; 5 would
// be taken as an integer), and a control character (a quoted "\0" cut OUT_DIR
// short where the C library reads it) is never part of a setting.
Status CheckConfigValue(const std::string& path, const std::string& key, const YAML::Node& value) {
  const std::string& tag = value.Tag();
  if (tag != "?" && tag != "!")
    return Status::Error(kConfigInvalid, path + ": value of '" + key + "' has the tag " + QuoteValue(tag) +
                                               "; write the plain value");
  if (HasControlCharacter(value.Scalar()))
    return Status::Error(kConfigInvalid, path + ": value of '" + key + "' " + QuoteValue(value.Scalar()) +
                                               " holds a control character");
  return Status::Ok();
}

}  // namespace

const char* PlatformName(Platform platform) { return platform == Platform::kCuda ? "cuda" : "cpu"; }
const char* ReductionName(Reduction reduction) {
  return reduction == Reduction::kOrdered ? "ordered" : "allreduce";
}
const char* MatmulPrecisionName(MatmulPrecision precision) {
  return precision == MatmulPrecision::kFp32 ? "fp32" : "tf32";
}
const char* CollectivesName(CollectivesKind collectives) {
  return collectives == CollectivesKind::kNccl ? "nccl" : "gloo";
}
const char* GemmName(GemmKind gemm) { return gemm == GemmKind::kOrdered ? "ordered" : "cublas"; }

Result<Plan> ReadPlan(const Environment& env) {
  Plan plan;
  DMLP_ASSIGN_OR_RETURN(plan.steps, RequireInteger(env, "STEPS", 1));
  DMLP_ASSIGN_OR_RETURN(plan.seed, RequireInteger(env, "SEED", 0, INT64_MAX));
  DMLP_RETURN_IF_ERROR(CheckSeed(env, plan.seed));
  DMLP_ASSIGN_OR_RETURN(plan.batch, RequireInteger(env, "BATCH", 1));
  DMLP_ASSIGN_OR_RETURN(plan.microbatches, RequireInteger(env, "MICROBATCHES", 1));
  DMLP_ASSIGN_OR_RETURN(plan.learning_rate, RequirePositiveNumber(env, "LEARNING_RATE"));
  DMLP_ASSIGN_OR_RETURN(std::string out_dir, RequireString(env, "OUT_DIR"));
  plan.out_dir = std::filesystem::absolute(out_dir).lexically_normal().string();
  if (plan.out_dir.size() > 1 && plan.out_dir.back() == '/') plan.out_dir.pop_back();
  DMLP_ASSIGN_OR_RETURN(plan.platform,
                        Choice(env, "PLATFORM", nullptr,
                               {std::pair{"cuda", Platform::kCuda}, std::pair{"cpu", Platform::kCpu}}));
  DMLP_RETURN_IF_ERROR(ReadPlace(env, plan));
  DMLP_RETURN_IF_ERROR(ReadModel(env, plan));
  DMLP_ASSIGN_OR_RETURN(plan.heartbeat_timeout_seconds,
                        RequireInteger(env, "HEARTBEAT_TIMEOUT_SECONDS", 1));
  DMLP_ASSIGN_OR_RETURN(plan.data_shards,
                        OptionalInteger(env, "DATA_SHARDS", plan.num_processes, 1));
  DMLP_ASSIGN_OR_RETURN(plan.matmul_precision,
                        Choice(env, "MATMUL_PRECISION", "fp32",
                               {std::pair{"fp32", MatmulPrecision::kFp32},
                                std::pair{"tf32", MatmulPrecision::kTf32}}));
  DMLP_ASSIGN_OR_RETURN(plan.reduction,
                        Choice(env, "REDUCTION", "ordered",
                               {std::pair{"ordered", Reduction::kOrdered},
                                std::pair{"allreduce", Reduction::kAllreduce}}));
  DMLP_ASSIGN_OR_RETURN(plan.collectives, ReadCollectives(env, plan.platform));
  DMLP_ASSIGN_OR_RETURN(plan.gemm, ReadGemm(env, plan.platform));
  DMLP_ASSIGN_OR_RETURN(plan.checkpoint_every, OptionalInteger(env, "CHECKPOINT_EVERY", 0, 0));
  DMLP_ASSIGN_OR_RETURN(plan.checkpoint_keep, ReadCheckpointKeep(env));
  DMLP_ASSIGN_OR_RETURN(int64_t resume, OptionalInteger(env, "RESUME", 0, 0, 1));
  plan.resume = resume == 1;
  DMLP_ASSIGN_OR_RETURN(plan.digest_threads, OptionalInteger(env, "DIGEST_THREADS", 0, 1, 64));
  DMLP_ASSIGN_OR_RETURN(plan.divergence_check,
                        Choice(env, "DIVERGENCE_CHECK", "on", {std::pair{"on", true}, std::pair{"off", false}}));
  DMLP_ASSIGN_OR_RETURN(plan.audit_every,
                        OptionalInteger(env, "AUDIT_EVERY", kDefaultAuditEvery, 0));
  DMLP_ASSIGN_OR_RETURN(std::string cpu_gemm, OptionalString(env, "DMLP_CPU_GEMM", "auto"));
  DMLP_ASSIGN_OR_RETURN(plan.cpu_gemm, ParseCpuGemm(cpu_gemm));
  DMLP_ASSIGN_OR_RETURN(plan.cpu_transport, ReadCpuTransport(env, plan.platform));
  DMLP_RETURN_IF_ERROR(CrossCheck(env, plan));
  DMLP_ASSIGN_OR_RETURN(JobIdentity job, SelectJobIdentity(env, plan.out_dir));
  plan.job_id = std::move(job.id);
  plan.job_id_source = std::move(job.source);
  return plan;
}

Result<Environment> LoadConfigFile(const std::string& path) {
  // A read error (a directory, /proc/self/mem) is CONFIG_INVALID naming it,
  // never an exception out of the parser's stream.
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok() && text.status().code() == kNotFound)
    return Status::Error(kConfigInvalid, path + ": cannot be read");
  if (!text.ok()) return Status::Error(kConfigInvalid, path + ": cannot be read: " + text.status().detail());
  DMLP_RETURN_IF_ERROR(CheckRawControlBytes(path, *text));
  YAML::Node root;
  try {
    root = LoadOneDocument(*text);
  } catch (const YAML::Exception& error) {
    return Status::Error(kConfigInvalid, path + ": " + error.what());
  }
  Environment config;
  if (root.IsNull()) return config;
  if (!root.IsMap()) return Status::Error(kConfigInvalid, path + ": must be a mapping of keys");
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) return Status::Error(kConfigInvalid, path + ": non-scalar key");
    const std::string key = entry.first.Scalar();
    std::string name = key;
    bool lower_case = true;
    for (char& c : name) {
      lower_case = lower_case && !std::isupper(static_cast<unsigned char>(c));
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    bool known = std::any_of(std::begin(kPlanNames), std::end(kPlanNames),
                             [&](const char* candidate) { return name == candidate; });
    if (!known || !lower_case)
      return Status::Error(kConfigInvalid, path + ": unknown key " + QuoteValue(key));
    if (config.Get(name)) return Status::Error(kConfigInvalid, path + ": duplicate key '" + key + "'");
    if (!entry.second.IsScalar())
      return Status::Error(kConfigInvalid, path + ": value of '" + key + "' must be a scalar");
    DMLP_RETURN_IF_ERROR(CheckConfigValue(path, key, entry.second));
    config.SetFromFile(name, entry.second.Scalar(), path);
  }
  return config;
}

namespace {

// The order the plan's GEMMs add in (bit_settings.h's GEMM order): the CPU's
// choice, or on CUDA the ordered kernel, which obeys the CPU kernels' ORDER
// RULE and so has their order's name, or cuBLAS with its compute type.
std::string GemmOrder(const Plan& plan) {
  if (plan.platform == Platform::kCpu) return CpuGemmOrder(plan.cpu_gemm);
  if (plan.gemm == GemmKind::kOrdered) return CpuGemmOrder(CpuGemm::kAuto);
  return std::string("cublas-") + MatmulPrecisionName(plan.matmul_precision);
}

// A plan setting's value as its fingerprint line gives it (common/bit_settings.h);
// nullopt: no line. Settings outside the plan rows have none.
std::optional<std::string> SettingValue(const Plan& plan, Setting setting) {
  switch (setting) {
    case Setting::kVersion: return DMLP_VERSION;
    case Setting::kSteps: return std::to_string(plan.steps);
    case Setting::kSeed: return std::to_string(plan.seed);
    case Setting::kBatch: return std::to_string(plan.batch);
    case Setting::kMicrobatches: return std::to_string(plan.microbatches);
    case Setting::kLearningRate: return PythonFloatRepr(plan.learning_rate);
    case Setting::kPlatform: return PlatformName(plan.platform);
    case Setting::kNumProcesses: return std::to_string(plan.num_processes);
    case Setting::kFeatures: return std::to_string(plan.model.features);
    case Setting::kWidth: return std::to_string(plan.model.width);
    case Setting::kLayers: return std::to_string(plan.model.layers);
    case Setting::kClasses: return std::to_string(plan.model.classes);
    case Setting::kHeartbeat: return std::to_string(plan.heartbeat_timeout_seconds);
    case Setting::kDataShards: return std::to_string(plan.data_shards);
    case Setting::kMatmulPrecision: return MatmulPrecisionName(plan.matmul_precision);
    case Setting::kReduction: return ReductionName(plan.reduction);
    // What the samples and initial parameters are (trainer/math/data_definition.h).
    case Setting::kDataDefinition: return std::string(kDataDefinitionId);
    // Collectives never change a byte with REDUCTION=ordered, but ranks must
    // agree on them to pair up at all: NCCL ranks wait for a unique id, Gloo
    // ranks for a TCP mesh, so a mixed job would only time out. Only on CUDA:
    // the CPU platform has no choice, and its fingerprint lines stay as they were.
    case Setting::kCollectives:
      if (plan.platform != Platform::kCuda) return std::nullopt;
      return CollectivesName(plan.collectives);
    case Setting::kCheckpointEvery: return std::to_string(plan.checkpoint_every);
    case Setting::kResume: return plan.resume ? "1" : "0";
    // Ranks must agree on these (a rank that does not check or audit would
    // leave the others waiting): a line only when not the default, so the
    // default's lines stay as they were.
    case Setting::kDivergenceCheck:
      if (plan.divergence_check) return std::nullopt;
      return "off";
    case Setting::kAuditEvery:
      if (plan.audit_every == kDefaultAuditEvery) return std::nullopt;
      return std::to_string(plan.audit_every);
    // Ranks and resumes must agree on the order their GEMMs add in; the
    // kernel that follows it (kCpuGemmKernel) is free to differ.
    case Setting::kGemmOrder: return GemmOrder(plan);
    // Ranks must agree (tcp and shm would wait for each other on different
    // transports); a line only when not the default. Never a bit.
    case Setting::kCpuTransport:
      if (plan.platform != Platform::kCpu || plan.cpu_transport == CpuTransport::kAuto) return std::nullopt;
      return CpuTransportName(plan.cpu_transport);
    case Setting::kOutDir:
    case Setting::kCheckpointKeep:
    case Setting::kCoordinatorPort:
    case Setting::kProcessId:
    case Setting::kDigestThreads:
    case Setting::kCpuThreads:
    case Setting::kImageId:
    case Setting::kNcclVariables:
    case Setting::kCpuGemmKernel:
    case Setting::kGemm:
    case Setting::kCublas:
    case Setting::kDevice:
    case Setting::kNcclLibrary:
    case Setting::kCudaToolchain:
      return std::nullopt;
  }
  return std::nullopt;
}

// "key=value" lines, so a mismatch can be reported field by field, of the plan
// rows of the table that `keep` selects, in the table's order.
template <typename Keep>
std::string FingerprintOf(const Plan& plan, Keep keep) {
  std::string text;
  for (const SettingRow& row : kSettings) {
    if (row.plan_key.empty() || !keep(row)) continue;
    std::optional<std::string> value = SettingValue(plan, row.setting);
    if (!value) continue;
    text += (text.empty() ? "" : "\n") + std::string(row.plan_key) + "=" + *value;
  }
  return text;
}

}  // namespace

std::string PlanFingerprint(const Plan& plan) {
  return FingerprintOf(plan, [](const SettingRow&) { return true; });
}

std::string BitsFingerprint(const Plan& plan) {
  const bool allreduce = plan.reduction == Reduction::kAllreduce;
  const bool cublas = plan.gemm == GemmKind::kCublas;
  return FingerprintOf(plan, [allreduce, cublas](const SettingRow& row) {
    return DecidesBits(row.bits, allreduce, cublas);
  });
}

nlohmann::json PlanDocument(const Plan& plan) {
  nlohmann::json document = {{"steps", plan.steps},
          {"seed", plan.seed},
          {"batch", plan.batch},
          {"microbatches", plan.microbatches},
          {"learning_rate", plan.learning_rate},
          {"out_dir", plan.out_dir},
          {"platform", PlatformName(plan.platform)},
          {"data_shards", plan.data_shards},
          {"matmul_precision", MatmulPrecisionName(plan.matmul_precision)},
          {"reduction", ReductionName(plan.reduction)},
          {"checkpoint_every", plan.checkpoint_every},
          {"data_definition", kDataDefinitionId},
          {"gemm_order", GemmOrder(plan)}};
  if (plan.platform == Platform::kCuda) {
    document["collectives"] = CollectivesName(plan.collectives);
    document["gemm"] = GemmName(plan.gemm);
  }
  return document;
}

}  // namespace dmlp
