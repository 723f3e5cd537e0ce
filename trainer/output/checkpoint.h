// defines: CheckpointFileName, CheckpointFingerprint, WriteCheckpoint, CheckpointChoice,
//          FindResumeCheckpoint, LoadCheckpoint
//
// CHECKPOINT_EVERY=K: after every K-th step rank 0 writes
// OUT_DIR/checkpoint-<step, 8 digits>.safetensors — the state-file format
// (common/state_file.h) with metadata step, params_sha256 (the step's receipt
// digest) and the checkpoint fingerprint — atomically (temporary, fsync,
// rename, fsync of the directory), then removes all but the newest two.
//
// RESUME=1 takes the newest valid checkpoint. A checkpoint whose bytes do not
// hash to its recorded digest (torn, corrupted) is skipped with a warning and
// the previous one is used; one of another plan is refused
// (CHECKPOINT_PLAN_MISMATCH), never half-used; if checkpoints exist but none is
// valid, CHECKPOINT_INVALID.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/state_layout.h"
#include "common/status.h"
#include "trainer/plan.h"

namespace dmlp {

/// "checkpoint-00000012.safetensors"
std::string CheckpointFileName(int64_t step);
/// The plan facts that decide the bits of a state: like PlanFingerprint but
/// without NUM_PROCESSES (resuming on another world size is allowed when
/// DATA_SHARDS is kept), STEPS (a job may be extended), CHECKPOINT_EVERY, RESUME.
std::string CheckpointFingerprint(const Plan& plan);

/// Rank 0: writes the checkpoint of `step` and prunes older ones (keeps two).
Status WriteCheckpoint(const Plan& plan, const StateLayout& layout, int64_t step,
                       const uint8_t* image, const std::string& params_sha256);

struct CheckpointChoice {
  int64_t step = 0;          // 0: no checkpoint, start from the initial state
  std::string path;          // empty when step == 0
  std::string params_sha256; // the digest recorded in (and verified against) the file
  std::vector<std::string> skipped;  // "<file>: <why>" for newer checkpoints that were corrupt
};

/// Scans OUT_DIR for the newest valid checkpoint (see the header comment).
Result<CheckpointChoice> FindResumeCheckpoint(const Plan& plan, const StateLayout& layout);
/// Reads a chosen checkpoint's state image and checks it hashes to `choice.params_sha256`.
Result<std::vector<uint8_t>> LoadCheckpoint(const CheckpointChoice& choice, const StateLayout& layout);

}  // namespace dmlp
