// defines: RunTrainer
//
// One rank of the job, shared by both platforms: open the outputs, join the
// rendezvous, build the platform backend, initialize (or resume) the state,
// run STEPS x MICROBATCHES updates with a receipt per step, and on rank 0
// write state.safetensors and result.json after every rank finished.
#pragma once

#include "common/status.h"
#include "trainer/plan.h"

namespace dmlp {

/// Runs the whole job for this rank; the first error ends it.
Status RunTrainer(const Plan& plan);

}  // namespace dmlp
