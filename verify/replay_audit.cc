#include "verify/replay_audit.h"

#include <chrono>
#include <filesystem>
#include <random>

#include "common/format/checkpoint_file.h"
#include "common/format/error_codes.h"
#include "common/state_file.h"
#include "verify/replay_run.h"
#include "verify/verifier.h"

namespace dmlp::verify {
namespace {

namespace fs = std::filesystem;

// The result.json digests a replay that reaches the run's last step must give too.
constexpr const char* kFinalFields[] = {"final_params_sha256", "final_opt_state_sha256", "params_sha256",
                                        "final_loss"};

std::string FinalField(const ResultDoc& doc, std::string_view field) {
  if (field == "final_params_sha256") return doc.final_params_sha256;
  if (field == "final_opt_state_sha256") return doc.final_opt_state_sha256;
  if (field == "params_sha256") return doc.params_sha256;
  return doc.final_loss;
}

// The kept checkpoints whose state hashes to its recorded digest and to the
// run's receipt of its step; the others are findings, and no segment starts there.
std::map<int64_t, std::string> CheckedCheckpoints(const std::string& run_dir,
                                                  const std::map<int64_t, RecordedStep>& recorded,
                                                  int64_t final_step, FindingSink& sink) {
  std::map<int64_t, std::string> usable;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(run_dir, error)) {
    const std::string name = entry.path().filename().string();
    std::optional<int64_t> step = CheckpointStepOfName(name);
    if (!step || *step < 1 || *step >= final_step) continue;
    const std::string path = run_dir + "/" + name;
    auto invalid = [&](const std::string& why) {
      sink.Add(Finding::Of("replay.checkpoint_invalid", path, why).AtStep(*step));
    };
    Result<StateFileIndex> index = ReadStateFileIndex(path);
    if (!index.ok()) { invalid(index.status().ToString()); continue; }
    auto recorded_digest = index->metadata.find(kCheckpointDigestKey);
    const std::string digest = recorded_digest == index->metadata.end() ? "" : recorded_digest->second;
    Result<StateDigests> digests = DigestStateFile(path);
    auto receipt = recorded.find(*step);
    if (!digests.ok()) {
      invalid(digests.status().ToString());
    } else if (digests->state != digest) {
      invalid("its state hashes to " + digests->state + ", not to its recorded " + digest);
    } else if (receipt == recorded.end() || receipt->second.params_sha256 != digest) {
      invalid("its digest " + digest + " is not the run's receipt of step " + std::to_string(*step));
    } else {
      usable[*step] = path;
    }
  }
  return usable;
}

// What differs between a recomputed receipt and the run's, "" when nothing does.
std::string StepDifference(const RecordedStep& replayed, const RecordedStep& run) {
  std::string what;
  if (replayed.params_sha256 != run.params_sha256)
    what = "params_sha256 " + replayed.params_sha256 + " recomputed, " + run.params_sha256 + " recorded";
  if (replayed.loss != run.loss)
    what += (what.empty() ? "" : ", ") + std::string("loss ") + replayed.loss + " recomputed, " + run.loss + " recorded";
  return what;
}

// Compares a segment's replay with the run: its steps, then at the run's end the final digests.
ReplaySegmentOutcome Judge(const ReplaySegment& segment, const SegmentRun& replay,
                           const std::map<int64_t, RecordedStep>& recorded, const ResultDoc& run) {
  ReplaySegmentOutcome outcome{segment, "reproduced", ""};
  for (int64_t step = segment.from + 1; step <= segment.to; ++step) {
    auto replayed = replay.receipts.find(step);
    if (replayed == replay.receipts.end()) {
      outcome.outcome = "incomplete";
      outcome.detail = "dmlp-train wrote no receipt of step " + std::to_string(step) + " (" +
                       replay.train.how_it_ended + "): " + replay.train.error_line;
      return outcome;
    }
    auto run_step = recorded.find(step);
    if (run_step == recorded.end()) {  // the ordinary checks found every step: a file changed since
      outcome.outcome = "incomplete";
      outcome.detail = "the run's receipt of step " + std::to_string(step) + " is gone";
      return outcome;
    }
    std::string what = StepDifference(replayed->second, run_step->second);
    if (!what.empty()) {
      outcome.outcome = "mismatch";
      outcome.step = step;
      outcome.detail = "step " + std::to_string(step) + ": " + what;
      return outcome;
    }
  }
  if (segment.to == run.steps && replay.result) {
    for (const char* field : kFinalFields)
      if (FinalField(*replay.result, field) != FinalField(run, field)) {
        outcome.outcome = "mismatch";
        outcome.step = segment.to;
        outcome.detail = "step " + std::to_string(segment.to) + ": result.json " + field + " " +
                         FinalField(*replay.result, field) + " recomputed, " + FinalField(run, field) + " recorded";
        return outcome;
      }
  }
  return outcome;
}

void AddOutcomeFinding(const ReplaySegmentOutcome& outcome, const std::string& run_dir, FindingSink& sink) {
  const std::string where = "steps " + std::to_string(outcome.segment.from + 1) + ".." +
                            std::to_string(outcome.segment.to);
  if (outcome.outcome == "mismatch") {
    sink.Add(Finding::Of("replay.mismatch", run_dir, std::string(kReplayMismatch) + ": " + outcome.detail)
                 .AtStep(outcome.step));
  } else if (outcome.outcome == "incomplete") {
    sink.Add(Finding::Of("replay.segment_failed", run_dir, where + " not replayed: " + outcome.detail));
  }
}

std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g %%", 100 * fraction);
  return text;
}

void AddCoverageFinding(const ReplayAudit& audit, const std::string& run_dir, FindingSink& sink) {
  const int64_t chosen = static_cast<int64_t>(audit.segments.size());
  std::string message = "replayed " + std::to_string(audit.steps_replayed) + " of " +
                        std::to_string(audit.run_steps) + " steps (" +
                        Percent(static_cast<double>(audit.steps_replayed) / static_cast<double>(audit.run_steps)) +
                        ") in " + std::to_string(chosen) + " of " + std::to_string(audit.run_segments) +
                        " segments, seed " + std::to_string(audit.seed) + " (--replay-seed " +
                        std::to_string(audit.seed) + " repeats it)";
  if (chosen < audit.run_segments)
    message += "; were 10 % of the segments wrong, this sample would miss all of them with probability " +
               Percent(audit.miss_chance_10) + " (1 %: " + Percent(audit.miss_chance_1) + ")";
  sink.Add(Finding::Of("replay.coverage", run_dir, message));
}

}  // namespace

Result<ReplayAudit> AuditByReplay(const ReplayRequest& request, const RunReport& run, FindingSink& sink) {
  ReplayAudit audit;
  audit.requested = request.segments ? std::to_string(*request.segments) : "all";
  audit.seed = request.seed ? *request.seed : std::random_device{}();
  const auto not_run = [&](const std::string& why, const char* id) {
    audit.not_run = why;
    sink.Add(Finding::Of(id, run.dir, why));
    return audit;
  };
  if (sink.errors() > 0 || sink.incompletes() > 0 || !run.finished || !run.result)
    return not_run("not replayed: the ordinary checks did not pass, and a replay proves nothing of a run "
                   "that is not consistent and complete", "replay.not_run");
  const ResultDoc& result = *run.result;
  if (result.format != ResultDoc::Format::kDmlp || run.receipts.ranks.empty())
    return not_run("not replayed: a reference JAX run, whose bits dmlp-train does not compute",
                   "replay.not_reproducible");
  audit.run_steps = result.steps;
  DMLP_ASSIGN_OR_RETURN(auto recorded, ReadRecordedSteps(run.dir + "/" + run.receipts.ranks.front().name));
  const std::map<int64_t, std::string> checkpoints = CheckedCheckpoints(run.dir, recorded, result.steps, sink);
  std::vector<int64_t> starts;
  for (const auto& [step, path] : checkpoints) starts.push_back(step);
  const std::vector<ReplaySegment> all = SegmentsBetween(starts, result.steps);
  audit.run_segments = static_cast<int64_t>(all.size());
  audit.from_start = checkpoints.empty();
  if (audit.from_start)
    sink.Add(Finding::Of("replay.from_start", run.dir,
                         "no kept checkpoint (CHECKPOINT_EVERY with CHECKPOINT_KEEP=all or every:M keeps them): "
                         "the replay starts from the plan's initial state at step 0 and recomputes every step"));
  DMLP_ASSIGN_OR_RETURN(ReplayWorkspace workspace, ReplayWorkspace::Create());
  const std::vector<std::string> environment = ReplayEnvironment(result);
  DMLP_ASSIGN_OR_RETURN(audit.bits_difference, ProbeBits(result, environment, workspace.path() + "/probe"));
  if (!audit.bits_difference.empty()) return not_run("not replayed: " + audit.bits_difference, "replay.not_reproducible");
  const std::vector<ReplaySegment> chosen = ChooseSegments(all, request.segments, audit.seed);
  audit.miss_chance_10 = MissProbability(audit.run_segments, static_cast<int64_t>(chosen.size()), 0.10);
  audit.miss_chance_1 = MissProbability(audit.run_segments, static_cast<int64_t>(chosen.size()), 0.01);
  for (const ReplaySegment& segment : chosen) {
    const std::string dir = workspace.path() + "/segment-" + std::to_string(segment.from) + "-" +
                            std::to_string(segment.to);
    const auto started = std::chrono::steady_clock::now();
    const std::string checkpoint = segment.from > 0 ? checkpoints.at(segment.from) : "";
    DMLP_ASSIGN_OR_RETURN(SegmentRun replay, ReplaySegmentRun(segment, environment, checkpoint, recorded, dir));
    audit.replay_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    ReplaySegmentOutcome outcome = Judge(segment, replay, recorded, result);
    if (outcome.outcome != "incomplete") audit.steps_replayed += segment.steps();
    if (outcome.outcome == "mismatch" && !audit.first_mismatch_step) {
      audit.first_mismatch = outcome.detail;
      audit.first_mismatch_step = outcome.step;
    }
    AddOutcomeFinding(outcome, run.dir, sink);
    audit.segments.push_back(std::move(outcome));
  }
  AddCoverageFinding(audit, run.dir, sink);
  return audit;
}

}  // namespace dmlp::verify
