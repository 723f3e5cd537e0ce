// defines: StartingPoint, CheckBeforeRendezvous, PrepareStart
//
// How one attempt of the job starts, fresh or resumed, without leaving a trace
// when it is refused. Before the rendezvous every rank only looks (a receipt
// already there is OUTPUT_EXISTS at once, with nothing created). After it,
// rank 0 creates OUT_DIR, takes its lock (output_lock.h), checks again under
// the lock, and for RESUME=1 validates and commits the resume
// (output/replay.h: validate read-only, then move the receipts aside); then it
// tells every rank through the coordinator — "ok" and the checkpoint, or the
// error every rank then fails with — and only then does any rank create its
// receipt files. So a start refused for any reason (port in use, a stray
// receipt, a second job in the same OUT_DIR, a SIGTERM while waiting for
// peers) leaves OUT_DIR exactly as it found it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/state_layout.h"
#include "common/status.h"
#include "trainer/output/output_lock.h"
#include "trainer/output/run_output.h"
#include "trainer/plan.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {

/// Where this attempt starts: the step already done, its state, and the open outputs.
struct StartingPoint {
  int64_t done_steps = 0;
  std::vector<uint8_t> image;
  // rank 0: held for the job's life. Declared before `output` so that it is
  // released after the receipt files a stopped start removes are gone.
  std::unique_ptr<OutputLock> lock;
  std::unique_ptr<RunOutput> output;
};

/// Before the rendezvous, read-only: refuses a fresh start whose outputs exist.
Status CheckBeforeRendezvous(const Plan& plan);
/// After the rendezvous: rank 0 decides under OUT_DIR's lock and tells the
/// others; every rank then opens its outputs and loads its starting state.
Result<StartingPoint> PrepareStart(const Plan& plan, const StateLayout& layout,
                                   Rendezvous& rendezvous);

}  // namespace dmlp
