// defines: RunTrainer, FailureReporter, ExitCodeFor
//
// One rank of the job, shared by both platforms: open the outputs, join the
// rendezvous, build the platform backend, initialize (or resume) the state,
// run STEPS x MICROBATCHES updates with a receipt per step, and on rank 0
// write state.safetensors and result.json after every rank finished.
#pragma once

#include <functional>

#include "common/status.h"
#include "trainer/plan.h"

namespace dmlp {

/// Called with the error that ends this rank, once, before the rank leaves
/// the rendezvous (main's printer: "dmlp-train: error: ...").
using FailureReporter = std::function<void(const Status&)>;

/// Runs the whole job for this rank; the first error ends it. Errors after the
/// rendezvous are given to `report_failure` before peers are released; all
/// errors are also returned.
Status RunTrainer(const Plan& plan, const FailureReporter& report_failure);

/// dmlp-train's exit code for the error that ended it: 2 configuration or
/// usage (ENV_*, CONFIG_INVALID, USAGE), 4 RANK_DIVERGED (a launcher may react
/// to it alone), 5 SHARD_AUDIT_FAILED (common/format/failure_line.h), 1 any
/// other failure (PEER_LOST included); common/format/error_codes.cc's rows agree. Also the code of a rank its monitor ends a heartbeat
/// after a loss (trainer/rendezvous/last_resort.h).
int ExitCodeFor(const Status& status);

}  // namespace dmlp
