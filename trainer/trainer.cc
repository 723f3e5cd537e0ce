#include "trainer/trainer.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <vector>

#include <unistd.h>

#include "common/env.h"
#include "common/float_repr.h"
#include "trainer/backend.h"
#include "trainer/output/checkpoint.h"
#include "trainer/output/digest_pipeline.h"
#include "trainer/init.h"
#include "trainer/output/progress.h"
#include "trainer/rendezvous/rendezvous.h"
#include "trainer/output/replay.h"
#include "trainer/output/run_output.h"

extern char** environ;

namespace dmlp {
namespace {

/// The step-0 state: flax-style initial parameters, Adam count 0, zero moments.
Result<std::vector<uint8_t>> InitialImage(const StateLayout& layout, const Plan& plan) {
  std::vector<uint8_t> image(layout.image_bytes(), 0);
  DMLP_RETURN_IF_ERROR(InitParams(layout, static_cast<uint64_t>(plan.seed),
                                  reinterpret_cast<float*>(image.data())));
  return image;
}

/// The facts that decide the bits (DESIGN.md "fingerprint"), beyond the backend's own.
nlohmann::json RunFingerprint(const Plan& plan, const Backend& backend) {
  nlohmann::json fingerprint = backend.Fingerprint();
  fingerprint["matmul_precision"] = MatmulPrecisionName(plan.matmul_precision);
  fingerprint["data_shards"] = plan.data_shards;
  fingerprint["reduction"] = ReductionName(plan.reduction);
  nlohmann::json nccl = nlohmann::json::object();
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    if (text.rfind("NCCL_", 0) == 0 && text.find('=') != std::string::npos)
      nccl[text.substr(0, text.find('='))] = text.substr(text.find('=') + 1);
  }
  fingerprint["nccl_env"] = nccl;
  return fingerprint;
}

/// DMLP_PROFILE=1: rank 0 prints one "PROFILE {json}" line on stderr at the end
/// (bench/train_bench reads it): seconds per phase, summed over the whole run.
/// DMLP_PROFILE=all: every rank does (to see how much ranks wait for each other).
void PrintProfile(const Plan& plan, const Backend& backend, const DigestPipeline& digests,
                  double train_seconds, double startup_seconds) {
  const std::string flag = std::getenv("DMLP_PROFILE") ? std::getenv("DMLP_PROFILE") : "";
  if (!(flag == "all" || (flag == "1" && plan.process_id == 0))) return;
  nlohmann::json profile = backend.Profile();
  profile["digest_thread"] = digests.hash_seconds();
  profile["digest_threads"] = digests.hasher_threads();
  profile["train_loop"] = train_seconds;
  profile["startup"] = startup_seconds;
  profile["updates"] = plan.steps * plan.microbatches;
  std::fprintf(stderr, "PROFILE %s\n", profile.dump().c_str());
}

Status Train(const Plan& plan, int64_t first_step, Backend& backend, DigestPipeline& digests) {
  ProgressReporter progress(stderr, first_step, plan.steps);
  const bool report = plan.process_id == 0;
  for (int64_t step = first_step; step <= plan.steps; ++step) {
    for (int64_t microbatch = 0; microbatch < plan.microbatches; ++microbatch)
      DMLP_RETURN_IF_ERROR(backend.Update(step, microbatch));
    DMLP_ASSIGN_OR_RETURN(float loss, backend.LastLoss());
    if (!std::isfinite(loss)) {
      (void)digests.Drain();  // receipts of the steps before stay whole
      return Status::Error("LOSS_NONFINITE",
                           "step=" + std::to_string(step) + " loss=" + Float32Repr(loss));
    }
    DMLP_RETURN_IF_ERROR(digests.Submit(step, Float32Repr(loss)));
    if (report) progress.StepDone(step);
  }
  progress.Finish();
  return digests.Drain();
}

/// Where this attempt starts: the step already done, its state, and the open outputs.
struct StartingPoint {
  int64_t done_steps = 0;
  std::vector<uint8_t> image;
  std::unique_ptr<RunOutput> output;
};

Result<StartingPoint> FreshStart(const Plan& plan, const StateLayout& layout) {
  StartingPoint start;
  DMLP_ASSIGN_OR_RETURN(RunOutput output, RunOutput::Open(plan));
  start.output = std::make_unique<RunOutput>(std::move(output));
  DMLP_ASSIGN_OR_RETURN(start.image, InitialImage(layout, plan));
  return start;
}

// Rank 0 decides how to resume and tells the others through the coordinator,
// as lines: "ok", step, checkpoint path, its digest, aside folder — or
// "error", code, detail, so that every rank fails with the same error.
constexpr char kResumeKey[] = "resume/decision";

std::string DecideResume(const Plan& plan, const StateLayout& layout) {
  auto error = [](const Status& status) {
    return "error\n" + status.code() + "\n" + status.detail();
  };
  if (::access((plan.out_dir + "/" + kResultFile).c_str(), F_OK) == 0)
    return error(Status::Error("OUTPUT_ALREADY_COMPLETE", plan.out_dir));
  Result<CheckpointChoice> choice = FindResumeCheckpoint(plan, layout);
  if (!choice.ok()) return error(choice.status());
  for (const std::string& why : choice->skipped)
    std::fprintf(stderr, "dmlp-train: warning: skipping checkpoint: %s\n", why.c_str());
  Result<std::string> aside = MoveReceiptsAside(plan.out_dir);
  if (!aside.ok()) return error(aside.status());
  return "ok\n" + std::to_string(choice->step) + "\n" + choice->path + "\n" +
         choice->params_sha256 + "\n" + *aside;
}

Result<StartingPoint> ResumeStart(const Plan& plan, const StateLayout& layout,
                                  Rendezvous& rendezvous) {
  std::string decision;
  if (plan.process_id == 0) {
    decision = DecideResume(plan, layout);
    DMLP_RETURN_IF_ERROR(rendezvous.Set(kResumeKey, decision));
  } else {
    DMLP_ASSIGN_OR_RETURN(decision, rendezvous.Get(kResumeKey));
  }
  std::vector<std::string> fields;
  for (size_t begin = 0;;) {
    size_t end = decision.find('\n', begin);
    fields.push_back(decision.substr(begin, end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  if (fields.size() == 3 && fields[0] == "error") return Status::Error(fields[1], fields[2]);
  if (fields.size() != 5 || fields[0] != "ok")
    return Status::Error("PROTOCOL_ERROR", "bad resume decision from rank 0");
  CheckpointChoice choice{std::stoll(fields[1]), fields[2], fields[3], {}};
  DMLP_ASSIGN_OR_RETURN(std::vector<Receipt> prior, ReadPriorReceipts(fields[4], plan.process_id));
  if (choice.step > 0 && prior.size() >= static_cast<size_t>(choice.step) &&
      prior[choice.step - 1].params_sha256 != choice.params_sha256)
    return Status::Error("RESUME_RECEIPTS_INVALID",
                         "the receipt of step " + std::to_string(choice.step) +
                             " does not match its checkpoint's digest " + choice.params_sha256);
  if (choice.step > plan.steps)
    return Status::Error("RESUME_INVALID", "the newest checkpoint is after step " +
                                               std::to_string(choice.step) + ", past STEPS=" +
                                               std::to_string(plan.steps));
  StartingPoint start;
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

Status MaybeCheckpoint(const Plan& plan, const StateLayout& layout, Rendezvous& rendezvous,
                       int64_t step, const std::string& hash, const uint8_t* image);

/// Fault injection for tests (tests/e2e/trainer/test_resume.py):
/// DMLP_TEST_KILL_AT=STEP makes every rank whose environment has it SIGKILL
/// itself right after step STEP's receipt and checkpoint are written — the
/// same effect as an external kill at that moment, without its race against a
/// fast job. Returns 0 when unset.
Result<int64_t> KillStepForTests() {
  if (std::getenv("DMLP_TEST_KILL_AT") == nullptr) return int64_t{0};
  return RequireInteger(Environment::FromProcess(), "DMLP_TEST_KILL_AT", 1, INT32_MAX);
}

/// The digest pipeline's sink: the receipt, then on checkpoint steps the
/// checkpoint (rank 0), which every rank checks against its own digest.
Status RecordStep(const Plan& plan, const StateLayout& layout, RunOutput& output,
                  Rendezvous& rendezvous, int64_t step, const std::string& loss,
                  const std::string& hash, const uint8_t* image, int64_t kill_step) {
  DMLP_RETURN_IF_ERROR(output.Record(step, loss, hash));
  DMLP_RETURN_IF_ERROR(MaybeCheckpoint(plan, layout, rendezvous, step, hash, image));
  if (step == kill_step) std::raise(SIGKILL);
  return Status::Ok();
}

Status MaybeCheckpoint(const Plan& plan, const StateLayout& layout, Rendezvous& rendezvous,
                       int64_t step, const std::string& hash, const uint8_t* image) {
  if (plan.checkpoint_every == 0 || step % plan.checkpoint_every != 0) return Status::Ok();
  const std::string key = "checkpoint/" + std::to_string(step);
  if (plan.process_id == 0) {
    DMLP_RETURN_IF_ERROR(WriteCheckpoint(plan, layout, step, image, hash));
    return rendezvous.Set(key, hash);
  }
  DMLP_ASSIGN_OR_RETURN(std::string written, rendezvous.Get(key));
  if (written != hash)
    return Status::Error("CHECKPOINT_MISMATCH", "step " + std::to_string(step) + ": rank " +
                                                    std::to_string(plan.process_id) + " holds " +
                                                    hash + ", the checkpoint " + written);
  return Status::Ok();
}

/// Everything after the rendezvous: backend, state, training, result files.
Status RunJoined(const Plan& plan, const StateLayout& layout, Rendezvous& rendezvous,
                 StartingPoint start, int64_t kill_step,
                 std::chrono::steady_clock::time_point started) {
  RunOutput& output = *start.output;
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                        plan.platform == Platform::kCpu
                            ? CreateCpuBackend(plan, layout, rendezvous)
                            : CreateCudaBackend(plan, layout, rendezvous));
  DMLP_RETURN_IF_ERROR(backend->LoadState(start.image.data()));
  // A job resumed from its final checkpoint has nothing left to compute: the
  // checkpoint is the final state. Otherwise the last snapshot will be.
  if (start.done_steps < plan.steps) start.image = {};

  DigestPipeline digests(*backend, layout.image_bytes(),
                         [&](int64_t step, const std::string& loss, const std::string& hash,
                             const uint8_t* image) {
                           return RecordStep(plan, layout, output, rendezvous, step, loss, hash,
                                             image, kill_step);
                         },
                         DigestThreadsFor(plan));
  DMLP_RETURN_IF_ERROR(digests.Start());
  const auto loop_start = std::chrono::steady_clock::now();
  DMLP_RETURN_IF_ERROR(Train(plan, start.done_steps + 1, *backend, digests));
  const auto loop_end = std::chrono::steady_clock::now();
  PrintProfile(plan, *backend, digests, std::chrono::duration<double>(loop_end - loop_start).count(),
               std::chrono::duration<double>(loop_start - started).count());

  // Like the reference: result files only once every rank has all its receipts.
  DMLP_RETURN_IF_ERROR(rendezvous.Barrier("training-complete"));
  const uint8_t* final_image = start.image.empty() ? digests.last_image() : start.image.data();
  DMLP_RETURN_IF_ERROR(output.Complete(layout, final_image, RunFingerprint(plan, *backend)));
  return rendezvous.Barrier("artifact-complete");
}

}  // namespace

Status RunTrainer(const Plan& plan, const FailureReporter& report_failure) {
  const auto started = std::chrono::steady_clock::now();
  DMLP_ASSIGN_OR_RETURN(StateLayout layout, StateLayout::Create(plan.model));
  DMLP_ASSIGN_OR_RETURN(int64_t kill_step, KillStepForTests());
  // A fresh job opens its outputs first, so a refusal costs no rendezvous; a
  // resumed one needs rank 0's decision first.
  Result<StartingPoint> start = StartingPoint{};
  if (!plan.resume) start = FreshStart(plan, layout);
  if (!start.ok()) return start.status();
  RendezvousOptions options;
  options.address = plan.coordinator_address;
  options.port = static_cast<int>(plan.coordinator_port);
  options.rank = static_cast<int>(plan.process_id);
  options.world_size = static_cast<int>(plan.num_processes);
  options.heartbeat_timeout_seconds = static_cast<int>(plan.heartbeat_timeout_seconds);
  options.plan_fingerprint = PlanFingerprint(plan);
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<Rendezvous> rendezvous, Rendezvous::Join(options));
  if (plan.resume) start = ResumeStart(plan, layout, *rendezvous);
  Status status = start.ok() ? RunJoined(plan, layout, *rendezvous, std::move(*start), kill_step,
                                         started)
                             : start.status();
  if (!status.ok()) {
    // Say why first, then leave without waiting for peers: those waiting on
    // this rank fail at once with PEER_LOST (and may exit before us, which is
    // why the message must already be out), and rank 0 does not linger in its
    // coordinator for a heartbeat timeout — so dmlp-launch tears the job down.
    report_failure(status);
    rendezvous->Abandon();
    return status;
  }
  return rendezvous->Close();
}

}  // namespace dmlp
