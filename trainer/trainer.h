// defines: RunTrainer
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

}  // namespace dmlp
