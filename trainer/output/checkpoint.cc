#include "trainer/output/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "common/bit_settings.h"
#include "common/format/checkpoint_file.h"
#include "common/format/error_codes.h"
#include "common/state_digest.h"
#include "common/state_file.h"
#include "trainer/rendezvous/plan_difference.h"

namespace dmlp {
namespace {

namespace fs = std::filesystem;

/// Steps of the checkpoint files in OUT_DIR, newest first.
std::vector<int64_t> CheckpointSteps(const std::string& out_dir) {
  std::vector<int64_t> steps;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(out_dir, error))
    if (std::optional<int64_t> step = CheckpointStepOfName(entry.path().filename().string()))
      steps.push_back(*step);
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

std::string MetadataValue(const StateFileIndex& index, const std::string& key) {
  auto it = index.metadata.find(key);
  return it == index.metadata.end() ? std::string() : it->second;
}

/// The line "key=value" of `fingerprint` for `key`, or "" when it has none.
std::string LineOf(std::string_view fingerprint, std::string_view key) {
  const std::string text = "\n" + std::string(fingerprint) + "\n";
  const size_t start = text.find("\n" + std::string(key) + "=");
  if (start == std::string::npos) return "";
  return text.substr(start + 1, text.find('\n', start + 1) - start - 1);
}

/// What differs between the checkpoint's fingerprint and this plan's, and why
/// it matters where a setting decides the bits only under allreduce.
std::string DescribeCheckpointDifference(const Plan& plan, const std::string& recorded) {
  const std::string ours = CheckpointFingerprint(plan);
  std::string detail = DescribePlanDifference(recorded, ours, "the checkpoint");
  for (const SettingRow& row : kSettings) {
    if (row.bits != Bits::kWithAllreduce || row.plan_key.empty()) continue;
    const std::string line = LineOf(ours, row.plan_key);
    if (!line.empty() && line != LineOf(recorded, row.plan_key))
      detail += "; with REDUCTION=" + std::string(ReductionName(plan.reduction)) + " " + std::string(row.name) +
                " decides the bits";
  }
  return detail;
}

/// Validates one checkpoint file; a plan mismatch is returned as its own code.
Result<CheckpointChoice> Examine(const Plan& plan, const StateLayout& layout, int64_t step) {
  CheckpointChoice choice{step, plan.out_dir + "/" + CheckpointFileName(step), {}, {}};
  DMLP_ASSIGN_OR_RETURN(StateFileIndex index, ReadStateFileIndex(choice.path));
  const std::string recorded = MetadataValue(index, kCheckpointFingerprintKey);
  if (recorded != CheckpointFingerprint(plan))
    return Status::Error(kCheckpointPlanMismatch, choice.path + " was written by another plan: " +
                                                         DescribeCheckpointDifference(plan, recorded));
  if (MetadataValue(index, kCheckpointStepKey) != std::to_string(step))
    return Status::Error(kCheckpointInvalid, choice.path + ": metadata step does not match");
  choice.params_sha256 = MetadataValue(index, kCheckpointDigestKey);
  DMLP_ASSIGN_OR_RETURN(StateDigests digests, DigestStateFile(choice.path));
  if (digests.state != choice.params_sha256)
    return Status::Error(kCheckpointInvalid, choice.path + ": state digest " + digests.state +
                                                   " differs from the recorded " +
                                                   choice.params_sha256);
  if (index.tensors.size() != 3 * layout.leaves().size() + 1)
    return Status::Error(kCheckpointInvalid, choice.path + ": tensors do not match the model");
  return choice;
}

/// Whether CHECKPOINT_KEEP keeps the checkpoint of `step`, the `newness`-th
/// newest (0: the newest). every:M keeps the newest two as well, which a resume
/// falls back on.
bool Kept(const Plan& plan, int64_t step, size_t newness) {
  const CheckpointKeep& keep = plan.checkpoint_keep;
  switch (keep.kind) {
    case CheckpointKeep::Kind::kAll: return true;
    case CheckpointKeep::Kind::kNewest: return newness < static_cast<size_t>(keep.count);
    case CheckpointKeep::Kind::kEvery:
      return newness < 2 || (plan.checkpoint_every > 0 && step % (keep.count * plan.checkpoint_every) == 0);
  }
  return true;
}

}  // namespace

std::string CheckpointFingerprint(const Plan& plan) { return BitsFingerprint(plan); }

Status WriteCheckpoint(const Plan& plan, const StateLayout& layout, int64_t step,
                       const uint8_t* image, const std::string& params_sha256) {
  const std::string path = plan.out_dir + "/" + CheckpointFileName(step);
  DMLP_RETURN_IF_ERROR(WriteStateFile(path, layout, image,
                                      {{kCheckpointStepKey, std::to_string(step)},
                                       {kCheckpointDigestKey, params_sha256},
                                       {kCheckpointFingerprintKey, CheckpointFingerprint(plan)}})
                           .WithContext("checkpoint step " + std::to_string(step)));
  // Older ones go only once the new one is durable.
  std::vector<int64_t> steps = CheckpointSteps(plan.out_dir);
  for (size_t i = 0; i < steps.size(); ++i) {
    if (Kept(plan, steps[i], i)) continue;
    const std::string old = plan.out_dir + "/" + CheckpointFileName(steps[i]);
    if (::unlink(old.c_str()) != 0 && errno != ENOENT)
      return Status::Error(kIoError, "remove " + old);
  }
  return Status::Ok();
}

Result<CheckpointChoice> FindResumeCheckpoint(const Plan& plan, const StateLayout& layout,
                                              const CheckpointAgreement& agreed) {
  std::vector<int64_t> steps = CheckpointSteps(plan.out_dir);
  std::vector<std::string> skipped;
  bool disagreed = false;
  for (int64_t step : steps) {
    Result<CheckpointChoice> choice = Examine(plan, layout, step);
    if (choice.ok() && agreed) {
      Status agreement = agreed(*choice);
      if (agreement.code() == kCheckpointDisagrees) {
        disagreed = true;
        skipped.push_back(agreement.ToString());
        continue;
      }
      if (!agreement.ok()) return agreement;
    }
    if (choice.ok()) {
      choice->skipped = skipped;
      return choice;
    }
    if (choice.status().code() == kCheckpointPlanMismatch) return choice.status();
    skipped.push_back(choice.status().ToString());
  }
  if (!skipped.empty()) {
    // Resuming from the initial state instead would silently redo the whole
    // run: say why no checkpoint will do, and let the user decide.
    std::string detail = (disagreed ? "no checkpoint agrees with every rank's receipts in "
                                    : "no valid checkpoint in ") + plan.out_dir;
    for (const std::string& why : skipped) detail += "; " + why;
    return Status::Error(disagreed ? kCheckpointNotAgreed : kCheckpointInvalid, detail);
  }
  return CheckpointChoice{};
}

Result<std::vector<uint8_t>> LoadCheckpoint(const CheckpointChoice& choice,
                                            const StateLayout& layout) {
  Result<std::vector<uint8_t>> image = LoadStateImage(choice.path, layout);
  if (!image.ok()) return Status::Error(kCheckpointInvalid, image.status().ToString());
  // Re-hash what was read: the file could have changed since it was examined.
  if (DigestStateStep(image->data(), image->size()) != choice.params_sha256)
    return Status::Error(kCheckpointInvalid, choice.path + " changed while being loaded");
  return image;
}

}  // namespace dmlp
