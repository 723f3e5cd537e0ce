#include "trainer/start.h"

#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "common/format/error_codes.h"
#include "common/out_dir.h"
#include "trainer/math/init.h"
#include "trainer/output/checkpoint.h"
#include "trainer/output/replay.h"

namespace dmlp {
namespace {

// Rank 0's decision, as lines: "ok", step, checkpoint path, its digest — or
// "error", code, detail, so that every rank fails with the same error.
constexpr char kStartKey[] = "start/decision";

/// The step-0 state: flax-style initial parameters, Adam count 0, zero moments.
Result<std::vector<uint8_t>> InitialImage(const StateLayout& layout, const Plan& plan) {
  std::vector<uint8_t> image(layout.image_bytes(), 0);
  DMLP_RETURN_IF_ERROR(InitParams(layout, static_cast<uint32_t>(plan.seed),
                                  reinterpret_cast<float*>(image.data())));
  return image;
}

/// The earlier receipts of `rank` reach the checkpoint's step and agree with it.
Status CheckPriorCoversCheckpoint(const std::vector<Receipt>& prior, const CheckpointChoice& choice,
                                  int64_t rank) {
  if (choice.step == 0) return Status::Ok();
  if (static_cast<int64_t>(prior.size()) < choice.step)
    return Status::Error(kResumeReceiptsInvalid,
                         "the checkpoint is at step " + std::to_string(choice.step) +
                             " but the earlier receipts of rank " + std::to_string(rank) +
                             " end at step " + std::to_string(prior.size()));
  if (prior[choice.step - 1].params_sha256 != choice.params_sha256)
    return Status::Error(kResumeReceiptsInvalid,
                         "the receipt of step " + std::to_string(choice.step) +
                             " does not match its checkpoint's digest " + choice.params_sha256);
  return Status::Ok();
}

/// Whether `choice` may be resumed from: every earlier rank's receipt of its
/// step holds its digest. A checkpoint only a diverged rank 0 agrees with (one
/// written with DIVERGENCE_CHECK=off) is CHECKPOINT_DISAGREES, so the search
/// goes on to the previous one. Ranks of the earlier attempt outside the new
/// job whose receipts stop before the step have nothing to say; the new job's
/// ranks must reach it (they replay from it).
Status CheckpointAgrees(const CheckpointChoice& choice,
                        const std::map<int64_t, std::vector<Receipt>>& priors,
                        int64_t num_processes) {
  for (const auto& [rank, prior] : priors) {
    if (static_cast<int64_t>(prior.size()) < choice.step && rank >= num_processes) continue;
    if (static_cast<int64_t>(prior.size()) >= choice.step &&
        prior[choice.step - 1].params_sha256 != choice.params_sha256)
      return Status::Error(kCheckpointDisagrees,
                           choice.path + ": its digest " + choice.params_sha256 + " is not rank " +
                               std::to_string(rank) + "'s receipt of step " +
                               std::to_string(choice.step) + " (" +
                               prior[choice.step - 1].params_sha256 + "): the ranks had diverged");
    DMLP_RETURN_IF_ERROR(CheckPriorCoversCheckpoint(prior, choice, rank));
  }
  return Status::Ok();
}

/// Rank 0, RESUME=1, holding the lock: replay.h steps 1 (validate, read-only)
/// and 2 (move the receipts aside). Any error before the move changes nothing.
Result<CheckpointChoice> ValidateAndCommitResume(const Plan& plan, const StateLayout& layout,
                                                 const OutDir& out) {
  DMLP_ASSIGN_OR_RETURN(OutDir::Kind result, out.KindOf(kResultFile));
  if (result != OutDir::Kind::kAbsent) return Status::Error(kOutputAlreadyComplete, plan.out_dir);
  // Every distinct prior: each rank with a file (of the earlier attempts too,
  // whose receipts a checkpoint must agree with even where the new job has
  // fewer ranks), and one of the new job's ranks without one (metrics.jsonl
  // only), rather than reading it P times.
  DMLP_ASSIGN_OR_RETURN(std::set<int64_t> ranks, RanksWithReceiptFiles(out));
  ranks.insert(0);
  for (int64_t rank = 0; rank < plan.num_processes; ++rank) {
    if (ranks.insert(rank).second) break;  // one rank without a file stands for all of them
  }
  std::map<int64_t, std::vector<Receipt>> priors;
  for (int64_t rank : ranks) {
    DMLP_ASSIGN_OR_RETURN(priors[rank], ReadPriorReceipts(out, rank, true));
  }
  DMLP_ASSIGN_OR_RETURN(CheckpointChoice choice,
                        FindResumeCheckpoint(plan, layout, [&](const CheckpointChoice& candidate) {
                          return CheckpointAgrees(candidate, priors, plan.num_processes);
                        }));
  if (choice.step > plan.steps)
    return Status::Error(kResumeInvalid, "the newest checkpoint is after step " +
                                               std::to_string(choice.step) + ", past STEPS=" +
                                               std::to_string(plan.steps));
  // Every byte of the checkpoint is read and hashed once here, so a forged or
  // damaged one is refused before anything moves (each rank loads it again).
  if (choice.step > 0) DMLP_RETURN_IF_ERROR(LoadCheckpoint(choice, layout).status());
  for (const std::string& why : choice.skipped)
    std::fprintf(stderr, "dmlp-train: warning: skipping checkpoint: %s\n", why.c_str());
  ResumeStageReached("validated");
  DMLP_RETURN_IF_ERROR(MoveReceiptsAside(out).status());
  ResumeStageReached("moved");
  return choice;
}

/// Rank 0: creates OUT_DIR, takes its lock into `start`, and decides.
Result<CheckpointChoice> DecideStart(const Plan& plan, const StateLayout& layout,
                                     StartingPoint& start) {
  DMLP_ASSIGN_OR_RETURN(OutDir out, OutDir::Create(plan.out_dir));
  DMLP_ASSIGN_OR_RETURN(OutputLock lock, OutputLock::Acquire(out));
  start.lock = std::make_unique<OutputLock>(std::move(lock));
  if (!plan.resume) {
    // Again under the lock: a job that finished or started since our first look.
    DMLP_RETURN_IF_ERROR(RunOutput::CheckAbsentIn(plan, out));
    return CheckpointChoice{};
  }
  return ValidateAndCommitResume(plan, layout, out);
}

std::string EncodeDecision(const Result<CheckpointChoice>& choice) {
  if (!choice.ok())
    return "error\n" + choice.status().code() + "\n" + choice.status().detail();
  return "ok\n" + std::to_string(choice->step) + "\n" + choice->path + "\n" + choice->params_sha256;
}

Result<CheckpointChoice> DecodeDecision(const std::string& decision) {
  std::vector<std::string> fields;
  for (size_t begin = 0;;) {
    size_t end = decision.find('\n', begin);
    fields.push_back(decision.substr(begin, end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  if (fields.size() == 3 && fields[0] == "error") return Status::Error(fields[1], fields[2]);
  if (fields.size() != 4 || fields[0] != "ok" || fields[1].empty() ||
      fields[1].find_first_not_of("0123456789") != std::string::npos)
    return Status::Error(kProtocolError, "bad start decision from rank 0");
  return CheckpointChoice{std::stoll(fields[1]), fields[2], fields[3], {}};
}

}  // namespace

Status CheckBeforeRendezvous(const Plan& plan) {
  // Every rank looks, so all fail alike rather than rank 0 alone at mkdir.
  DMLP_RETURN_IF_ERROR(OutDir::CheckNoDanglingLink(plan.out_dir));
  if (plan.resume) return Status::Ok();  // rank 0 decides, under the lock
  return RunOutput::CheckAbsent(plan);
}

Result<StartingPoint> PrepareStart(const Plan& plan, const StateLayout& layout,
                                   Rendezvous& rendezvous) {
  StartingPoint start;
  std::string decision;
  if (plan.process_id == 0) {
    decision = EncodeDecision(DecideStart(plan, layout, start));
    DMLP_RETURN_IF_ERROR(rendezvous.Set(kStartKey, decision));
    ResumeStageReached("decided");
  } else {
    DMLP_ASSIGN_OR_RETURN(decision, rendezvous.Get(kStartKey));
  }
  DMLP_ASSIGN_OR_RETURN(CheckpointChoice choice, DecodeDecision(decision));
  if (!plan.resume) {
    DMLP_ASSIGN_OR_RETURN(RunOutput output, RunOutput::Open(plan));
    start.output = std::make_unique<RunOutput>(std::move(output));
    DMLP_ASSIGN_OR_RETURN(start.image, InitialImage(layout, plan));
    return start;
  }
  // replay.h steps 3 and 4: the prior receipts now all lie in superseded/.
  DMLP_ASSIGN_OR_RETURN(OutDir out, OutDir::Create(plan.out_dir));
  DMLP_ASSIGN_OR_RETURN(std::vector<Receipt> prior, ReadPriorReceipts(out, plan.process_id, false));
  DMLP_RETURN_IF_ERROR(CheckPriorCoversCheckpoint(prior, choice, plan.process_id));
  DMLP_ASSIGN_OR_RETURN(RunOutput output, RunOutput::OpenResumed(plan, choice.step, std::move(prior)));
  start.output = std::make_unique<RunOutput>(std::move(output));
  start.done_steps = choice.step;
  if (choice.step == 0) {
    DMLP_ASSIGN_OR_RETURN(start.image, InitialImage(layout, plan));
  } else {
    DMLP_ASSIGN_OR_RETURN(start.image, LoadCheckpoint(choice, layout));
  }
  if (plan.process_id == 0 && choice.step > 0)
    std::fprintf(stderr, "dmlp-train: resuming after step %lld from %s\n",
                 static_cast<long long>(choice.step), choice.path.c_str());
  return start;
}

}  // namespace dmlp
