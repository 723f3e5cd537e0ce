#include "trainer/trainer.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "common/build_info.h"
#include "common/env.h"
#include "common/float_repr.h"
#include "common/format/error_codes.h"
#include "common/format/failure_line.h"
#include "common/format/rank_env.h"
#include "trainer/backend.h"
#include "trainer/checks/divergence_check.h"
#include "trainer/checks/rank_devices.h"
#include "trainer/checks/shard_audit.h"
#include "trainer/memory_plan.h"
#include "trainer/output/checkpoint.h"
#include "trainer/output/digest_pipeline.h"
#include "trainer/output/progress.h"
#include "trainer/output/run_output.h"
#include "trainer/rendezvous/last_resort.h"
#include "trainer/rendezvous/rendezvous.h"
#include "trainer/start.h"
#include "trainer/test_faults.h"
#include "trainer/user_signals.h"

extern char** environ;

namespace dmlp {
namespace {

/// The facts that decide the bits (docs/files-and-formats.md, result.json's "fingerprint"), beyond the backend's own.
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
  profile["digest_thread_cpu"] = digests.hash_cpu_seconds();
  profile["image_bytes"] = digests.image_bytes();
  profile["digest_threads"] = digests.hasher_threads();
  profile["train_loop"] = train_seconds;
  profile["startup"] = startup_seconds;
  profile["updates"] = plan.steps * plan.microbatches;
  std::fprintf(stderr, "PROFILE %s\n", profile.dump().c_str());
}

/// A shard audit's failure stops the step loop where the verdict came: the
/// receipts of the steps before it are written whole first.
Status StopForAudit(Status verdict, DigestPipeline& digests, ShardAudit& audit) {
  if (verdict.code() == kShardAuditFailed) (void)digests.Drain();
  return audit.AgreeToStop(std::move(verdict));
}

/// The test hooks of the step loop (trainer/test_faults.h).
struct TestFaults {
  BitFlipForTests flip;             // DMLP_TEST_FLIP_BIT: the state, after an update
  PartialFaultForTests corruption;  // DMLP_TEST_CORRUPT_SHARD: a partial, before the reduction
};

Status Train(const Plan& plan, int64_t first_step, Backend& backend, DigestPipeline& digests,
             const TestFaults& faults, ShardAudit& audit) {
  ProgressReporter progress(stderr, first_step, plan.steps);
  const bool report = plan.process_id == 0;
  for (int64_t step = first_step; step <= plan.steps; ++step) {
    ReportUserSignals(stderr);  // SIGUSR1/2 (trainer/user_signals.h): logged, nothing else
    for (int64_t microbatch = 0; microbatch < plan.microbatches; ++microbatch) {
      DMLP_RETURN_IF_ERROR(backend.ComputePartials(step, microbatch));
      DMLP_RETURN_IF_ERROR(faults.corruption.BeforeReduction(backend, step, microbatch, plan.microbatches));
      if (Status verdict = audit.Check(step, microbatch); !verdict.ok())
        return StopForAudit(std::move(verdict), digests, audit);  // receipts to step - 1
      DMLP_RETURN_IF_ERROR(backend.ReduceAndApply());
      DMLP_RETURN_IF_ERROR(faults.flip.AfterUpdate(backend, step, microbatch, plan.microbatches));
    }
    if (Status verdict = audit.EndOfStep(step); !verdict.ok())
      return StopForAudit(std::move(verdict), digests, audit);  // receipts to step - 1
    DMLP_ASSIGN_OR_RETURN(float loss, backend.LastLoss());
    if (!std::isfinite(loss)) {
      (void)digests.Drain();  // receipts of the steps before stay whole
      return Status::Error(kLossNonfinite,
                           "step=" + std::to_string(step) + " loss=" + Float32Repr(loss));
    }
    DMLP_RETURN_IF_ERROR(digests.Submit(step, Float32Repr(loss)));
    if (report) progress.StepDone(step);
  }
  progress.Finish();
  if (Status verdict = audit.Finish(); !verdict.ok())
    return StopForAudit(std::move(verdict), digests, audit);  // every step's receipts
  return digests.Drain();
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

/// The digest pipeline's sink: the receipt, then the divergence check (so a
/// diverged step's receipts are all written, and a checkpoint only follows
/// agreement), then on checkpoint steps the checkpoint (rank 0), which every
/// rank checks against its own digest.
Status RecordStep(const Plan& plan, const StateLayout& layout, RunOutput& output,
                  Rendezvous& rendezvous, DivergenceCheck& check, int64_t step,
                  const std::string& loss, const std::string& hash, const uint8_t* image,
                  int64_t kill_step) {
  DMLP_RETURN_IF_ERROR(output.Record(step, loss, hash));
  DMLP_RETURN_IF_ERROR(check.Check(step, hash));
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
    return Status::Error(kCheckpointMismatch, "step " + std::to_string(step) + ": rank " +
                                                    std::to_string(plan.process_id) + " holds " +
                                                    hash + ", the checkpoint " + written);
  return Status::Ok();
}

/// A wait that failed because a peer was lost (the monitor cut it short) is
/// reported as that loss, the cause, rather than as the broken wait.
// A wait can also break before this rank's monitor hears of the loss: a peer
// that heard first shuts its Gloo sockets, and ours see "connection closed by
// peer" up to a ping interval before our next ping brings the coordinator's
// PEER_LOST (seen across hosts, tests/e2e/cluster). So a broken wait gives the
// monitor two ping intervals to name the cause; a failure with no lost peer
// behind it is reported as it is, that much later.
Status BlamePeerLoss(Status status, const PeerLoss& loss, std::chrono::milliseconds heartbeat) {
  if (status.ok()) return status;
  static constexpr std::string_view kWaitFailures[] = {kCollectiveError, kNcclError, kPeerLost,
                                                       kRendezvousTimeout, kRendezvousClosed,
                                                       kProtocolError};
  for (std::string_view code : kWaitFailures) {
    if (status.code() != code) continue;
    const bool broken_collective = code == kCollectiveError || code == kNcclError;
    const bool lost = loss.lost() ||
                      (broken_collective && loss.WaitUntilLost(2 * PeerMonitor::PingInterval(heartbeat)));
    return lost ? loss.failure() : status;
  }
  return status;
}

/// What ends this rank when its monitor finds it still stuck a heartbeat
/// after a loss (last_resort.h): this rank's own report and exit code, the
/// lost rank's host named once `devices` holds every rank's.
LastResort ReportLossAndExit(const FailureReporter& report_failure, std::vector<RankDevice> devices) {
  return [report_failure, devices = std::move(devices)](const Status& loss) {
    const Status named = NameLostPeerHost(loss, devices);
    report_failure(named);
    return ExitCodeFor(named);
  };
}

/// Rank 0: every rank's RunOutput::confirmed_replays(), indexed by rank.
Result<std::vector<int64_t>> GatherConfirmedReplays(const Plan& plan, Rendezvous& rendezvous) {
  std::vector<int64_t> counts;
  for (int64_t rank = 0; rank < plan.num_processes; ++rank) {
    DMLP_ASSIGN_OR_RETURN(std::string value,
                          rendezvous.Get("confirmed-replays/" + std::to_string(rank)));
    counts.push_back(std::stoll(value));  // written just above by that rank's own code
  }
  return counts;
}

/// What a rank that joined the job runs with (RunJoined).
struct JoinedRank {
  const Plan& plan;
  const StateLayout& layout;
  Rendezvous& rendezvous;
  StartingPoint start;  // this rank's state and run directory (trainer/start.h)
  int64_t kill_step;    // DMLP_TEST_KILL_AT (KillStepForTests); 0: none
  std::chrono::steady_clock::time_point started;  // the process' start, for the profile's setup time
  const FailureReporter& report_failure;
  // Filled for the caller, so that on failure they outlive its report: the
  // backend, because destroying it closes the collectives' connections, and
  // peers that see them close fail at once, so the launcher could tear this
  // rank down before it said why; every rank's device, to name a lost peer's host.
  std::unique_ptr<Backend>& backend_owner;
  std::vector<RankDevice>& devices;
};

/// Everything after the rendezvous: backend, state, training, result files.
Status RunJoined(JoinedRank joined) {
  const Plan& plan = joined.plan;
  const StateLayout& layout = joined.layout;
  Rendezvous& rendezvous = joined.rendezvous;
  StartingPoint& start = joined.start;
  std::unique_ptr<Backend>& backend_owner = joined.backend_owner;
  std::vector<RankDevice>& devices = joined.devices;
  RunOutput& output = *start.output;
  DMLP_ASSIGN_OR_RETURN(backend_owner, plan.platform == Platform::kCpu
                                           ? CreateCpuBackend(plan, layout, rendezvous)
                                           : CreateCudaBackend(plan, layout, rendezvous));
  Backend* backend = backend_owner.get();
  DMLP_RETURN_IF_ERROR(backend->LoadState(start.image.data()));
  // Where this rank runs, once its device is known (trainer/output/rank_env.h).
  DMLP_RETURN_IF_ERROR(output.BeginEnvironment(start.done_steps > 0 ? kEnvEventResume : kEnvEventStart, [backend] {
    return RankStack{DeviceDocument(backend->Device()), backend->Fingerprint()};
  }));
  // Once per job, and only once the job has started (rendezvous and backend),
  // so a rank that fails to start prints nothing but its error.
  if (plan.process_id == 0)
    std::fprintf(stderr, "dmlp-train: %lld ranks placed by %s; coordinator %s:%lld from %s\n",
                 static_cast<long long>(plan.num_processes), PlaceSourceName(plan.place_source),
                 plan.coordinator_address.c_str(), static_cast<long long>(plan.coordinator_port),
                 plan.coordinator_from.c_str());
  // A job resumed from its final checkpoint has nothing left to compute: the
  // checkpoint is the final state. Otherwise the last snapshot will be.
  if (start.done_steps < plan.steps) start.image = {};
  // Every rank's host and device, for the failures that name them (rank_devices.h).
  if (plan.num_processes > 1) {
    DMLP_ASSIGN_OR_RETURN(devices, GatherRankDevices(rendezvous, *backend));
    SetLastResort(ReportLossAndExit(joined.report_failure, devices));
  }
  // The digest pipeline's sink waits on every rank's step (divergence check,
  // checkpoint agreement) beside the step loop, whose shard audit waits on the
  // rendezvous too: each gets its own connection, so neither holds up the other.
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<Rendezvous> sink_lane, rendezvous.OpenLane());
  DivergenceCheck check = DivergenceCheck::Start(plan, devices, *sink_lane);
  TestFaults faults;
  DMLP_ASSIGN_OR_RETURN(faults.flip,
                        BitFlipForTests::FromEnvironment(Environment::FromProcess(), layout.image_bytes()));
  DMLP_ASSIGN_OR_RETURN(faults.corruption, PartialFaultForTests::FromEnvironment(Environment::FromProcess()));

  DigestPipeline digests(*backend, layout.image_bytes(),
                         [&](int64_t step, const std::string& loss, const std::string& hash,
                             const uint8_t* image) {
                           return RecordStep(plan, layout, output, *sink_lane, check, step, loss,
                                             hash, image, joined.kill_step);
                         },
                         DigestThreadsFor(plan));
  std::unique_ptr<ShardAudit> audit = ShardAudit::Start(plan, *backend, rendezvous, devices);
  DMLP_RETURN_IF_ERROR(digests.Start());
  const auto loop_start = std::chrono::steady_clock::now();
  DMLP_RETURN_IF_ERROR(
      PreferDivergence(Train(plan, start.done_steps + 1, *backend, digests, faults, *audit), digests));
  const auto loop_end = std::chrono::steady_clock::now();
  PrintProfile(plan, *backend, digests, std::chrono::duration<double>(loop_end - loop_start).count(),
               std::chrono::duration<double>(loop_start - joined.started).count());

  // Like the reference: result files only once every rank has all its receipts.
  // Each rank's count of confirmed replays travels with the barrier to rank 0's result.json.
  DMLP_RETURN_IF_ERROR(rendezvous.Set("confirmed-replays/" + std::to_string(plan.process_id),
                                      std::to_string(output.confirmed_replays())));
  DMLP_RETURN_IF_ERROR(rendezvous.Barrier("training-complete"));
  std::vector<int64_t> confirmed_replays;
  if (plan.process_id == 0) {
    DMLP_ASSIGN_OR_RETURN(confirmed_replays, GatherConfirmedReplays(plan, rendezvous));
  }
  const uint8_t* final_image = start.image.empty() ? digests.last_image() : start.image.data();
  DMLP_RETURN_IF_ERROR(output.Complete(layout, final_image, RunFingerprint(plan, *backend),
                                       confirmed_replays));
  DMLP_RETURN_IF_ERROR(rendezvous.Barrier("artifact-complete"));
  if (start.lock) start.lock->Finish();  // a finished run directory keeps no lock file
  return Status::Ok();
}

}  // namespace

int ExitCodeFor(const Status& status) {
  const std::string& code = status.code();
  if (code.rfind("ENV_", 0) == 0 || code == kConfigInvalid || code == kUsage) return 2;
  if (code == kRankDiverged) return kRankDivergedExit;
  if (code == kShardAuditFailed) return kShardAuditFailedExit;
  return 1;
}

Status RunTrainer(const Plan& plan, const FailureReporter& report_failure) {
  const auto started = std::chrono::steady_clock::now();
  // Before anything is allocated or created in OUT_DIR: even the layout of an
  // absurd plan (LAYERS=2000000000) would take gigabytes and seconds.
  // The digest pipeline holds DIGEST_THREADS + 1 snapshots (digest_pipeline.h).
  DMLP_RETURN_IF_ERROR(CheckPlanMemory(plan, DigestThreadsFor(plan) + 1));
  DMLP_ASSIGN_OR_RETURN(StateLayout layout, StateLayout::Create(plan.model));
  DMLP_ASSIGN_OR_RETURN(int64_t kill_step, KillStepForTests());
  DMLP_RETURN_IF_ERROR(ImageIdFromEnvironment().status());  // refused before the rendezvous
  // Only look before the rendezvous (a refusal costs no rendezvous and leaves
  // nothing); create only once rank 0 holds OUT_DIR's lock (trainer/start.h).
  DMLP_RETURN_IF_ERROR(CheckBeforeRendezvous(plan));
  RendezvousOptions options;
  options.address = plan.coordinator_address;
  options.port = static_cast<int>(plan.coordinator_port);
  options.rank = static_cast<int>(plan.process_id);
  options.world_size = static_cast<int>(plan.num_processes);
  options.heartbeat_timeout_seconds = static_cast<int>(plan.heartbeat_timeout_seconds);
  options.plan_fingerprint = PlanFingerprint(plan);
  options.job_id = plan.job_id;
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<Rendezvous> rendezvous, Rendezvous::Join(options));
  // From here every wait on a peer, collectives included, ends once a peer is
  // silent for the heartbeat while this rank runs (peer_monitor.h).
  Status status = plan.num_processes > 1 ? rendezvous->StartPeerMonitor() : Status::Ok();
  SetLastResort(ReportLossAndExit(report_failure, {}));
  std::unique_ptr<Backend> backend;  // kept until the failure is reported (RunJoined)
  std::vector<RankDevice> devices;   // every rank's host, once gathered: a lost peer names its host
  if (status.ok()) {
    Result<StartingPoint> start = PrepareStart(plan, layout, *rendezvous);
    status = start.ok() ? RunJoined({plan, layout, *rendezvous, std::move(*start), kill_step, started,
                                     report_failure, backend, devices})
                        : start.status();
  }
  if (status.ok()) backend.reset();  // as before: gone before the rendezvous closes
  status = NameLostPeerHost(
      BlamePeerLoss(std::move(status), *rendezvous->peer_loss(), rendezvous->heartbeat_timeout()), devices);
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
