// defines: RunOutput
//
// The files one rank writes into OUT_DIR (docs/files-and-formats.md):
//   rank-<r>.jsonl   every rank, one receipt line per step
//   rank-<r>.env.jsonl  every rank, one line per (re)start: where it ran (rank_env.h)
//   metrics.jsonl    rank 0, the same lines without "rank"
//   stdout           rank 0, "METRIC step=S loss=L params_sha256=H"
//   state.safetensors, result.json   rank 0, once all ranks finished
// Receipt files are created exclusively and each line goes out with pwrite at
// the rank's own offset, checked first against what the file holds
// (receipt_file.h): a process restored from a freeze confirms the lines that
// are already there, and never overwrites or leaves a hole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/out_dir.h"
#include "common/receipt.h"
#include "common/state_digest.h"
#include "common/state_layout.h"
#include "common/format/result_json.h"
#include "common/status.h"
#include "trainer/output/rank_env.h"
#include "trainer/output/receipt_file.h"
#include "trainer/output/termination_cleanup.h"
#include "trainer/plan.h"

namespace dmlp {

inline constexpr char kMetricsFile[] = "metrics.jsonl";
inline constexpr char kStateFile[] = "state.safetensors";
/// "rank-<r>.jsonl"
std::string RankFileName(int64_t rank);

class RunOutput {
 public:
  /// Read-only look before the rendezvous, so that a start bound to be refused
  /// is refused before it creates anything (OUT_DIR absent is fine):
  /// OUTPUT_ALREADY_COMPLETE (result.json exists), OUTPUT_EXISTS (this rank's
  /// receipt or env file, or rank 0's metrics.jsonl, exists), OUTPUT_NOT_REGULAR (a
  /// link or other non-file there), IO_ERROR.
  static Status CheckAbsent(const Plan& plan);
  /// The same check in an open OUT_DIR.
  static Status CheckAbsentIn(const Plan& plan, const OutDir& out);
  /// Creates OUT_DIR if needed and this rank's receipt and env files (never
  /// through a link). Nothing in OUT_DIR changes on failure: the codes of
  /// CheckAbsent, and ENV_INVALID for DMLP_IMAGE_ID.
  /// REQUIRES: the job is known to start (rank 0 holds OUT_DIR's lock and said so).
  static Result<RunOutput> Open(const Plan& plan);
  /// RESUME=1: Open, then rewrite the receipts of steps 1..resume_step from
  /// `prior` (an earlier attempt's, replay.h) and keep the later ones: Record()
  /// of such a step fails with REPLAY_DIVERGED unless it reproduces them.
  static Result<RunOutput> OpenResumed(const Plan& plan, int64_t resume_step,
                                       std::vector<Receipt> prior);
  RunOutput(RunOutput&& other) noexcept;
  RunOutput& operator=(RunOutput&&) = delete;
  /// Closes the files; receipt files this object created and never wrote a
  /// line to (the job failed before its first step) are removed, and so is the
  /// env file then (its "start" line describes a start that computed nothing),
  /// so a failed start leaves OUT_DIR as it was and the rerun is not OUTPUT_EXISTS.
  ~RunOutput();

  /// Writes the env file's first line, `event` "start" or "resume", and from
  /// then on checks at every Record whether the process was restored (a
  /// "restored" line, before that step's receipt). `describe` is asked per line.
  Status BeginEnvironment(const std::string& event, std::function<RankStack()> describe);

  /// Appends the step's receipt (and on rank 0 the metrics line and METRIC stdout line).
  /// REQUIRES: steps are recorded in order 1, 2, ...
  Status Record(int64_t step, const std::string& loss, const std::string& params_sha256);
  /// Rank 0: writes state.safetensors then result.json (atomically, in that order).
  /// `fingerprint` is the platform description (Backend::Fingerprint plus plan facts);
  /// `confirmed_replays` holds each rank's confirmed_replays(), indexed by rank.
  Status Complete(const StateLayout& layout, const uint8_t* final_image,
                  const nlohmann::json& fingerprint, const std::vector<int64_t>& confirmed_replays);

  int64_t last_step() const { return last_step_; }
  /// Steps whose receipt line this rank found already written, identical
  /// (a process restored to an earlier point replaying them).
  int64_t confirmed_replays() const { return confirmed_replays_; }

 private:
  explicit RunOutput(const Plan& plan) : plan_(plan) {}
  void CloseFiles();
  /// Rank 0's METRIC line on stdout; a failed write is a warning, once (the receipts are the record).
  void PrintMetricLine(int64_t step, const std::string& loss, const std::string& params_sha256);

  Plan plan_;
  int rank_fd_ = -1;
  int metrics_fd_ = -1;  // rank 0 only
  int env_fd_ = -1;
  std::string env_path_;
  std::string image_id_;  // DMLP_IMAGE_ID, "" when unset
  RankEnvRecorder env_;
  ReceiptFile rank_file_, metrics_file_;  // checked writers over the two descriptors
  int64_t last_step_ = 0;
  int64_t confirmed_replays_ = 0;
  bool metric_lines_lost_ = false;  // stdout failed (a reader gone, a full disk): warned once
  std::string last_loss_, last_hash_;
  std::vector<Receipt> prior_;  // an earlier attempt's receipts, to replay against
  std::vector<std::string> created_;  // paths of the receipt files Open created
  // The same files, removed by a SIGTERM that comes before their first line.
  std::vector<TerminationCleanup> cleanups_;
  // The env file, removed by a SIGTERM until the first receipt line is out
  // (it may hold its "start" line by then, so not only while empty).
  TerminationCleanup env_cleanup_;
};

}  // namespace dmlp
