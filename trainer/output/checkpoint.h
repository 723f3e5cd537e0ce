// defines: CheckpointFingerprint, WriteCheckpoint, CheckpointChoice,
//          CheckpointAgreement, FindResumeCheckpoint, LoadCheckpoint
//
// CHECKPOINT_EVERY=K: after every K-th step rank 0 writes
// OUT_DIR/checkpoint-<step, 8 digits>.safetensors — the state-file format
// (common/state_file.h) with metadata step, params_sha256 (the step's receipt
// digest) and the checkpoint fingerprint — atomically (temporary, fsync,
// rename, fsync of the directory), then removes those CHECKPOINT_KEEP does not
// keep (the newest two by default; all; or every M-th: plan.h CheckpointKeep).
//
// RESUME=1 takes the newest valid checkpoint. A checkpoint whose bytes do not
// hash to its recorded digest (torn, corrupted) is skipped with a warning and
// the previous one is used; one of another plan is refused
// (CHECKPOINT_PLAN_MISMATCH naming the first setting that differs), never
// half-used; if checkpoints exist but none is
// valid, CHECKPOINT_INVALID. A valid checkpoint whose digest is not what every
// rank of the earlier attempt recorded at its step (a rank 0 that had
// diverged, with DIVERGENCE_CHECK=off) is skipped the same way
// (CHECKPOINT_DISAGREES); if no checkpoint agrees, CHECKPOINT_NOT_AGREED.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/format/checkpoint_file.h"  // CheckpointFileName
#include "common/state_layout.h"
#include "common/status.h"
#include "trainer/plan.h"

namespace dmlp {

/// The plan facts that decide the bits of a state under the plan's REDUCTION
/// (BitsFingerprint, from the table in common/bit_settings.h): not STEPS (a job
/// may be extended), the heartbeat, checkpoints or RESUME, and NUM_PROCESSES
/// only with REDUCTION=allreduce (with ordered, resuming on another world size
/// that divides DATA_SHARDS gives the same receipts).
std::string CheckpointFingerprint(const Plan& plan);

/// Rank 0: writes the checkpoint of `step` and prunes older ones as CHECKPOINT_KEEP says (plan.h).
Status WriteCheckpoint(const Plan& plan, const StateLayout& layout, int64_t step,
                       const uint8_t* image, const std::string& params_sha256);

struct CheckpointChoice {
  int64_t step = 0;          // 0: no checkpoint, start from the initial state
  std::string path;          // empty when step == 0
  std::string params_sha256; // the digest recorded in (and verified against) the file
  std::vector<std::string> skipped;  // "<file>: <why>" for newer checkpoints that were corrupt
};

/// Whether a valid checkpoint may be resumed from: ok, CHECKPOINT_DISAGREES
/// (skip it for the previous one), or any other error (stop the search with it).
using CheckpointAgreement = std::function<Status(const CheckpointChoice&)>;

/// Scans OUT_DIR for the newest valid checkpoint that `agreed` accepts (see the
/// header comment); an empty `agreed` accepts every valid one.
Result<CheckpointChoice> FindResumeCheckpoint(const Plan& plan, const StateLayout& layout,
                                              const CheckpointAgreement& agreed = {});
/// Reads a chosen checkpoint's state image and checks it hashes to `choice.params_sha256`.
Result<std::vector<uint8_t>> LoadCheckpoint(const CheckpointChoice& choice, const StateLayout& layout);

}  // namespace dmlp
