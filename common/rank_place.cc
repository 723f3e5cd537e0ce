#include "common/rank_place.h"

#include <vector>

#include "common/format/error_codes.h"
#include "common/quote.h"
#include "common/slurm_hostlist.h"

namespace dmlp {
namespace {

constexpr int64_t kMaxRanks = 1 << 16;

// One engine's names for the three fields; nullptr where it exports none.
struct EngineNames {
  PlaceSource source;
  const char* rank;
  const char* size;
  const char* local_rank;
};

// Several engines' variables can be set at once and must then agree; the
// first listed names the source, so the fullest (size and local rank too) come first.
constexpr EngineNames kEngines[] = {
    {PlaceSource::kTorchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {PlaceSource::kOpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {PlaceSource::kSlurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {PlaceSource::kPmix, "PMIX_RANK", nullptr, nullptr},
};

// The engines whose rank variable is set, less the outer ones. torchrun's
// agent (it exports TORCHELASTIC_RUN_ID) and mpirun are launchers that
// commonly run inside another engine's task ("srun torchrun", mpirun in an
// sbatch allocation): the outer engine's variables then describe the
// launcher's task, not this process, and disagree with the inner ones by
// design. Any other pair that disagrees (a RANK left in the shell under srun)
// is a real conflict.
std::vector<const EngineNames*> PlacingEngines(const Environment& env) {
  const bool under_torchrun_agent = env.Get("TORCHELASTIC_RUN_ID").has_value();
  const bool under_mpirun = env.Get("OMPI_COMM_WORLD_RANK").has_value();
  std::vector<const EngineNames*> engines;
  for (const EngineNames& engine : kEngines) {
    if (!env.Get(engine.rank)) continue;
    bool outer = (under_torchrun_agent && engine.source != PlaceSource::kTorchrun) ||
                 (under_mpirun && engine.source == PlaceSource::kSlurm);
    if (!outer) engines.push_back(&engine);
  }
  return engines;
}

struct Field {
  std::string name;
  int64_t value = 0;
};

Status Conflict(const Field& first, const Field& second) {
  return Status::Error(kEnvConflict, first.name + "=" + std::to_string(first.value) + " and " +
                                           second.name + "=" + std::to_string(second.value) +
                                           " disagree");
}

// One field from every placing engine that exports it; they must all agree.
Result<std::optional<Field>> AgreedField(const Environment& env,
                                         const std::vector<const EngineNames*>& engines,
                                         const char* EngineNames::*member, int64_t min) {
  std::optional<Field> agreed;
  for (const EngineNames* engine : engines) {
    const char* name = engine->*member;
    if (name == nullptr || !env.Get(name)) continue;
    DMLP_ASSIGN_OR_RETURN(int64_t value, RequireInteger(env, name, min, kMaxRanks));
    if (agreed && agreed->value != value) return Conflict(*agreed, Field{name, value});
    if (!agreed) agreed = Field{name, value};
  }
  return agreed;
}

// dmlp's own name for a field, where set, must agree with the engine's; it
// supplies the field where the engine has none (PMIx exports no size).
Status MergeOwnName(const Environment& env, const char* name, int64_t min,
                    std::optional<Field>& field) {
  if (!env.Get(name) || (field && field->name == name)) return Status::Ok();
  DMLP_ASSIGN_OR_RETURN(int64_t value, RequireInteger(env, name, min, kMaxRanks));
  if (field && field->value != value) return Conflict(Field{name, value}, *field);
  field = Field{name, value};
  return Status::Ok();
}

// dmlp-launch's variables (or a person's): PROCESS_ID is only ever set on
// purpose, so any engine variables around it describe an outer launcher (one
// dmlp-launch per node under srun) and are ignored.
Status ReadOwnPlace(const Environment& env, RankPlace& place) {
  place.source = PlaceSource::kDmlp;
  DMLP_ASSIGN_OR_RETURN(place.num_processes, RequireInteger(env, "NUM_PROCESSES", 1, kMaxRanks));
  DMLP_ASSIGN_OR_RETURN(place.process_id, RequireInteger(env, "PROCESS_ID", 0, kMaxRanks));
  place.local_rank = place.process_id;  // one host: the rank is the device
  if (env.Get("LOCAL_RANK")) {
    DMLP_ASSIGN_OR_RETURN(place.local_rank, RequireInteger(env, "LOCAL_RANK", 0, kMaxRanks));
  }
  if (place.process_id >= place.num_processes)
    return Status::Error(kEnvInvalid, "PROCESS_ID must be less than NUM_PROCESSES");
  return Status::Ok();
}

Status ReadEnginePlace(const Environment& env, const std::vector<const EngineNames*>& engines,
                       RankPlace& place) {
  place.source = engines.front()->source;
  DMLP_ASSIGN_OR_RETURN(std::optional<Field> size, AgreedField(env, engines, &EngineNames::size, 1));
  DMLP_RETURN_IF_ERROR(MergeOwnName(env, "NUM_PROCESSES", 1, size));
  if (!size) return Status::Error(kEnvMissing, "NUM_PROCESSES");
  DMLP_ASSIGN_OR_RETURN(std::optional<Field> rank, AgreedField(env, engines, &EngineNames::rank, 0));
  DMLP_ASSIGN_OR_RETURN(std::optional<Field> local,
                        AgreedField(env, engines, &EngineNames::local_rank, 0));
  DMLP_RETURN_IF_ERROR(MergeOwnName(env, "LOCAL_RANK", 0, local));
  if (rank->value >= size->value)
    return Status::Error(kEnvInvalid, rank->name + "=" + std::to_string(rank->value) +
                                            " must be less than " + size->name + "=" +
                                            std::to_string(size->value));
  place.num_processes = size->value;
  place.process_id = rank->value;
  // No local rank anywhere (PMIx alone, one pod per rank): one rank per host.
  place.local_rank = local ? local->value : 0;
  // srun --gpus-per-task binds each task to its own GPUs (Slurm's implicit
  // --gpu-bind=per_task), which CUDA then numbers from 0 in every task.
  if (place.source == PlaceSource::kSlurm && env.Get("SLURM_GPUS_PER_TASK")) place.local_rank = 0;
  return Status::Ok();
}

// dmlp's names, then the torchrun/Kubernetes ones, then (Slurm only) the
// first host of the step, where rank 0 runs under Slurm's block and cyclic
// distributions alike.
Status ReadCoordinator(const Environment& env, RankPlace& place) {
  // torchrun's agent listens on MASTER_PORT itself (its store, which it tells
  // workers with TORCHELASTIC_USE_AGENT_STORE): the coordinator needs its own.
  const bool agent_store = env.Get("TORCHELASTIC_USE_AGENT_STORE") == "True";
  if (!env.Get("COORDINATOR_PORT") && agent_store)
    return Status::Error(kEnvMissing, "COORDINATOR_PORT (torchrun's MASTER_PORT is its agent's store)");
  const char* port_name = env.Get("COORDINATOR_PORT") || !env.Get("MASTER_PORT") ? "COORDINATOR_PORT"
                                                                                  : "MASTER_PORT";
  DMLP_ASSIGN_OR_RETURN(place.coordinator_port, RequireInteger(env, port_name, 1, 65535));
  for (const char* name : {"COORDINATOR_ADDRESS", "MASTER_ADDR"}) {
    if (!env.Get(name)) continue;
    DMLP_ASSIGN_OR_RETURN(place.coordinator_address, RequireString(env, name));
    place.coordinator_from = name;
    return Status::Ok();
  }
  if (place.source == PlaceSource::kSlurm) {
    for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}) {
      if (!env.Get(name)) continue;
      DMLP_ASSIGN_OR_RETURN(std::string list, RequireString(env, name));
      Result<std::string> first = FirstSlurmHost(list);
      if (!first.ok())
        return Status::Error(kEnvInvalid,
                             std::string(name) + "=" + QuoteValue(list) + " " + first.status().detail());
      place.coordinator_address = *first;
      place.coordinator_from = name;
      return Status::Ok();
    }
  }
  place.coordinator_address = "127.0.0.1";
  place.coordinator_from = "default";
  return Status::Ok();
}

}  // namespace

const char* PlaceSourceName(PlaceSource source) {
  switch (source) {
    case PlaceSource::kDmlp: return "dmlp";
    case PlaceSource::kSlurm: return "slurm";
    case PlaceSource::kOpenMpi: return "openmpi";
    case PlaceSource::kPmix: return "pmix";
    case PlaceSource::kTorchrun: return "torchrun";
  }
  return "unknown";
}

std::optional<PlaceSource> DetectPlaceSource(const Environment& env) {
  if (env.Get("PROCESS_ID")) return PlaceSource::kDmlp;
  std::vector<const EngineNames*> engines = PlacingEngines(env);
  if (engines.empty()) return std::nullopt;
  return engines.front()->source;
}

Result<RankPlace> ReadRankPlace(const Environment& env) {
  RankPlace place;
  std::vector<const EngineNames*> engines = PlacingEngines(env);
  // Without PROCESS_ID and without an engine, dmlp's names are the ones
  // missing (ENV_MISSING: NUM_PROCESSES, then PROCESS_ID, as before engines).
  if (env.Get("PROCESS_ID") || engines.empty()) {
    DMLP_RETURN_IF_ERROR(ReadOwnPlace(env, place));
  } else {
    DMLP_RETURN_IF_ERROR(ReadEnginePlace(env, engines, place));
  }
  DMLP_RETURN_IF_ERROR(ReadCoordinator(env, place));
  return place;
}

std::string FormatHostPort(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace dmlp
