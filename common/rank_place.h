// defines: PlaceSource, PlaceSourceName, RankPlace, DetectPlaceSource, ReadRankPlace
//
// Where a rank learns its place (rank, world size, local rank) and its
// coordinator, from whichever launcher started the process (docs/several-hosts.md,
// docs/configuration.md):
//   dmlp      PROCESS_ID, NUM_PROCESSES, LOCAL_RANK       (dmlp-launch, or by hand)
//   slurm     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID   (srun, sbatch steps)
//   openmpi   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK    (mpirun)
//   pmix      PMIX_RANK                                   (size from another source)
//   torchrun  RANK, WORLD_SIZE, LOCAL_RANK                (torchrun, PyTorchJob, JobSet)
// dmlp-launch is one more engine here, not a special case: it exports dmlp's
// names, the trainer reads them through this one function like any other.
// The source never reaches the plan fingerprint or the receipts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/env.h"
#include "common/status.h"

namespace dmlp {

enum class PlaceSource { kDmlp, kSlurm, kOpenMpi, kPmix, kTorchrun };

/// "dmlp", "slurm", "openmpi", "pmix" or "torchrun" (printed, and in result.json).
const char* PlaceSourceName(PlaceSource source);

struct RankPlace {
  PlaceSource source = PlaceSource::kDmlp;
  int64_t process_id = 0;     // 0 <= process_id < num_processes
  int64_t num_processes = 0;
  // The visible GPU this rank uses: the local rank, except 0 where the engine
  // gave each task its own GPU (srun --gpus-per-task, one pod per GPU).
  int64_t local_rank = 0;
  std::string coordinator_address;
  int64_t coordinator_port = 0;
  // The variable the address came from: COORDINATOR_ADDRESS, MASTER_ADDR,
  // SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, or "default" (127.0.0.1).
  std::string coordinator_from;
};

/// The launcher that placed this process, judged by which rank variable is
/// set (nesting resolved as ReadRankPlace does); nullopt when none is.
/// Reads no values, so it cannot fail: ReadRankPlace reports bad ones.
std::optional<PlaceSource> DetectPlaceSource(const Environment& env);

/// The rank's place and coordinator. ENV_MISSING when no source gives a field,
/// ENV_INVALID for bad values (named by their variable), ENV_CONFLICT when two
/// sources give different values for one field (both named).
Result<RankPlace> ReadRankPlace(const Environment& env);

/// "host:port", with an IPv6 address in brackets as URLs write it: "[::1]:31011".
std::string FormatHostPort(const std::string& host, int port);

}  // namespace dmlp
