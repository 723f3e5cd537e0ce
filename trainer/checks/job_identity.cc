#include "trainer/checks/job_identity.h"

#include <optional>

#include "common/format/error_codes.h"
#include "common/sha256.h"

namespace dmlp {
namespace {

Status CheckPrintable(const std::string& name, const std::string& value) {
  if (value.size() > kMaxJobIdBytes) {
    return Status::Error(kEnvInvalid, name + " is longer than " + std::to_string(kMaxJobIdBytes) + " bytes");
  }
  for (char c : value) {
    if (c < 0x21 || c > 0x7e) return Status::Error(kEnvInvalid, name + " must be printable ASCII without spaces");
  }
  return Status::Ok();
}

// A set, non-blank value of `name`; blank counts as absent (engines export empty variables).
std::optional<std::string> Present(const Environment& env, const char* name) {
  std::optional<std::string> value = env.Get(name);
  if (!value || value->find_first_not_of(" \t\r\n") == std::string::npos) return std::nullopt;
  return value;
}

}  // namespace

Result<JobIdentity> SelectJobIdentity(const Environment& env, const std::string& out_dir) {
  JobIdentity job;
  if (auto id = Present(env, "DMLP_JOB_ID")) {
    job = {*id, "DMLP_JOB_ID"};
  } else if (auto slurm = Present(env, "SLURM_JOB_ID")) {
    // Steps of one allocation are separate jobs that may share a port.
    auto step = Present(env, "SLURM_STEP_ID");
    job = {step ? *slurm + "." + *step : *slurm, step ? "SLURM_JOB_ID.SLURM_STEP_ID" : "SLURM_JOB_ID"};
  } else if (auto run = Present(env, "TORCHELASTIC_RUN_ID"); run && *run != "none") {
    job = {*run, "TORCHELASTIC_RUN_ID"};  // "none" is torchrun's default, shared by every job
  } else if (auto pmix = Present(env, "PMIX_NAMESPACE")) {
    job = {*pmix, "PMIX_NAMESPACE"};
  } else if (auto ompi = Present(env, "OMPI_MCA_orte_ess_jobid")) {
    job = {*ompi, "OMPI_MCA_orte_ess_jobid"};
  } else {
    // Ranks of one job without a launcher or an engine share OUT_DIR (on one host).
    const std::string text = "dmlp-out-dir:" + out_dir;
    return JobIdentity{"out-dir-" + Sha256Hex(text.data(), text.size()).substr(0, 32), "OUT_DIR"};
  }
  DMLP_RETURN_IF_ERROR(CheckPrintable(job.source, job.id));
  return job;
}

}  // namespace dmlp
