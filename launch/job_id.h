// defines: NewJobId, SetJobIdentity
//
// dmlp-launch gives the ranks it starts one job id (DMLP_JOB_ID, random 128-bit
// hex), so that the coordinator turns away ranks of any other job that meets it
// on the same COORDINATOR_PORT (trainer/checks/job_identity.h). An id already in the
// environment wins (the user's, or one shared by the launchers of a multi-node
// job); with --nnodes > 1 and none set, none is made up, since launchers on
// other nodes could not know it: the ranks then use their engine's job id or
// OUT_DIR's.
#pragma once

#include <string>

#include "common/env.h"
#include "common/status.h"

namespace dmlp {

/// 32 lower-case hex digits from getrandom(); INTERNAL when the kernel gives none.
Result<std::string> NewJobId();

/// Sets DMLP_JOB_ID in `env` to a new id unless it is set or `nnodes` > 1.
Status SetJobIdentity(Environment& env, int nnodes);

}  // namespace dmlp
