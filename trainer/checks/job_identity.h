// defines: JobIdentity, SelectJobIdentity, kMaxJobIdBytes
//
// Which job a rank belongs to, so that ranks of two jobs started on one
// COORDINATOR_PORT never join each other (the coordinator refuses a HELLO
// whose job id is not its own: JOB_MISMATCH). The id must survive a freeze
// and restore of the job, so it comes from the job's environment, never from
// pids or boot-time values. First match wins:
//   DMLP_JOB_ID                        set by dmlp-launch (random 128-bit hex), or by the user
//   SLURM_JOB_ID[.SLURM_STEP_ID]       Slurm
//   TORCHELASTIC_RUN_ID                torchrun (not its default "none")
//   PMIX_NAMESPACE                     Open MPI 5 (PMIx)
//   OMPI_MCA_orte_ess_jobid            Open MPI 4
//   OUT_DIR                            none of the above: the absolute OUT_DIR, hashed
// The id is not part of the plan fingerprint: receipts never depend on it.
#pragma once

#include <string>

#include "common/env.h"
#include "common/status.h"

namespace dmlp {

/// Longest accepted job id; engines' ids are far shorter.
inline constexpr size_t kMaxJobIdBytes = 256;

struct JobIdentity {
  std::string id;      // printable ASCII, 1..kMaxJobIdBytes bytes
  std::string source;  // the variable it came from ("DMLP_JOB_ID", ..., "OUT_DIR")
};

/// The job id from `env` by the order above; `out_dir` is the absolute OUT_DIR.
/// ENV_INVALID: NAME ... for an id that is too long or not printable ASCII.
Result<JobIdentity> SelectJobIdentity(const Environment& env, const std::string& out_dir);

}  // namespace dmlp
