// defines: RecordedStep, ReadRecordedSteps, ReplayWorkspace, ReplayEnvironment, ProbeBits, ReplaySegmentRun
//
// One replay of the audit (replay_audit.h): dmlp-train with the run's plan,
// one rank, PLATFORM=cpu, in a directory of the workspace. A segment from a
// checkpoint is a RESUME=1 job whose OUT_DIR holds a copy of the checkpoint
// and the run's receipts up to its step (what a resume needs to agree with);
// one from step 0 is a fresh job. Either way dmlp-train writes the receipts
// of the segment's steps anew, and they are compared here, not by dmlp-train.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "verify/replay_segments.h"
#include "verify/result_doc.h"
#include "verify/train_process.h"

namespace dmlp::verify {

/// One receipt line: its loss and hash, and its bytes (with the newline).
struct RecordedStep {
  std::string loss;
  std::string params_sha256;
  std::string line;
};

/// The receipts of a receipt file by step (lines that are not receipts are skipped).
Result<std::map<int64_t, RecordedStep>> ReadRecordedSteps(const std::string& path);

/// A temporary directory under TMPDIR (or /tmp), removed with everything in it when destroyed.
class ReplayWorkspace {
 public:
  static Result<ReplayWorkspace> Create();
  ReplayWorkspace(ReplayWorkspace&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  ReplayWorkspace(const ReplayWorkspace&) = delete;
  ~ReplayWorkspace();
  const std::string& path() const { return path_; }

 private:
  explicit ReplayWorkspace(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

/// The environment of a replay of `run`: the settings of every row of
/// common/bit_settings.h that decides its bits, as result.json records them,
/// with one rank on this machine's CPU; PATH, TMPDIR, HOME and DMLP_CPU_THREADS
/// from ours. Never DMLP_CPU_GEMM: the replay adds in dmlp's own order, the one
/// whose bits do not depend on the machine.
std::vector<std::string> ReplayEnvironment(const ResultDoc& run);

/// Runs the plan's first step in `dir` and returns "" when this machine's
/// dmlp-train gives the run's bits (the bits rows' result.json fields are
/// equal), else why not.
Result<std::string> ProbeBits(const ResultDoc& run, const std::vector<std::string>& environment,
                              const std::string& dir);

struct SegmentRun {
  TrainOutcome train;
  std::map<int64_t, RecordedStep> receipts;  // what the replay wrote, by step
  std::optional<ResultDoc> result;           // its result.json, when it finished
};

/// Replays `segment` in `dir`: from the checkpoint file `checkpoint` (ignored
/// when segment.from is 0) after the run's `recorded` receipts up to its start.
Result<SegmentRun> ReplaySegmentRun(const ReplaySegment& segment, const std::vector<std::string>& environment,
                                    const std::string& checkpoint,
                                    const std::map<int64_t, RecordedStep>& recorded, const std::string& dir);

}  // namespace dmlp::verify
