#include "trainer/output/run_output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/build_info.h"
#include "common/errno_error.h"
#include "common/file_util.h"
#include "common/out_dir.h"
#include "common/py_json.h"
#include "common/state_file.h"
#include "trainer/output/replay.h"

namespace dmlp {
namespace {

std::string PathIn(const Plan& plan, const std::string& name) { return plan.out_dir + "/" + name; }

nlohmann::json ResultDocument(const Plan& plan, int64_t steps, const std::string& final_loss,
                              const std::string& params_sha256, const StateDigests& digests,
                              const nlohmann::json& fingerprint,
                              const std::vector<int64_t>& confirmed_replays,
                              const std::string& image_id) {
  nlohmann::json rank_files = nlohmann::json::array();
  for (int64_t rank = 0; rank < plan.num_processes; ++rank) rank_files.push_back(RankFileName(rank));
  // The reference's fields (runtime.py Output.complete + train.py details),
  // jax_version replaced by dmlp_version, plus build, fingerprint and state_file.
  return {
      {"build", BuildDocument(ThisBuild(), image_id)},
      {"complete", true},
      {"confirmed_replays", confirmed_replays},
      {"dataset", "deterministic globally indexed Philox4x32-10 features and labels"},
      {"digest_cost", "copies the state to host memory each step; hashed on a background thread "
                      "while the next step computes"},
      {"digest_policy", "every step: SHA-256 of the canonical state image (params leaves, adam "
                        "count, mu leaves, nu leaves; C-order little-endian)"},
      {"dmlp_version", DMLP_VERSION},
      {"final_loss", final_loss},
      {"final_opt_state_sha256", digests.opt},
      {"final_params_sha256", digests.params},
      {"fingerprint", fingerprint},
      {"heartbeat_timeout_seconds", plan.heartbeat_timeout_seconds},
      // How the ranks were started: outside "plan" and "fingerprint", because
      // the same plan gives the same bits under any launcher.
      {"launch",
       {{"coordinator_from", plan.coordinator_from},
        {"place_source", PlaceSourceName(plan.place_source)}}},
      {"model",
       {{"classes", plan.model.classes},
        {"features", plan.model.features},
        {"heartbeat_timeout_s", plan.heartbeat_timeout_seconds},
        {"layers", plan.model.layers},
        {"port", plan.coordinator_port},
        {"process_id", plan.process_id},
        {"processes", plan.num_processes},
        {"width", plan.model.width}}},
      {"optimizer", "adam"},
      {"params_sha256", params_sha256},
      {"plan", PlanDocument(plan)},
      {"processes", plan.num_processes},
      {"rank_files", rank_files},
      {"state_file", kStateFile},
      {"steps", steps},
      {"updates_per_metric_step", plan.microbatches},
  };
}

}  // namespace

std::string RankFileName(int64_t rank) { return "rank-" + std::to_string(rank) + ".jsonl"; }

Status RunOutput::CheckAbsent(const Plan& plan) {
  Result<OutDir> out = OutDir::Open(plan.out_dir);
  if (!out.ok() && out.status().code() == "NOT_FOUND") return Status::Ok();  // created later
  if (!out.ok()) return out.status();
  return CheckAbsentIn(plan, *out);
}

Status RunOutput::CheckAbsentIn(const Plan& plan, const OutDir& out) {
  DMLP_ASSIGN_OR_RETURN(OutDir::Kind result, out.KindOf(kResultFile));
  if (result != OutDir::Kind::kAbsent) return Status::Error("OUTPUT_ALREADY_COMPLETE", plan.out_dir);
  std::vector<std::string> names = {RankFileName(plan.process_id), EnvFileName(plan.process_id)};
  if (plan.process_id == 0) names.insert(names.begin(), kMetricsFile);
  for (const std::string& name : names) {
    DMLP_ASSIGN_OR_RETURN(OutDir::Kind kind, out.KindOf(name));
    if (kind == OutDir::Kind::kRegular) return Status::Error("OUTPUT_EXISTS", out.PathOf(name));
    if (kind != OutDir::Kind::kAbsent)
      return Status::Error(kNotRegularCode, out.PathOf(name) + " is not a regular file "
                                                               "(dmlp never writes through links)");
  }
  return Status::Ok();
}

Result<RunOutput> RunOutput::Open(const Plan& plan) {
  DMLP_ASSIGN_OR_RETURN(std::string image_id, ImageIdFromEnvironment());
  DMLP_ASSIGN_OR_RETURN(OutDir out, OutDir::Create(plan.out_dir));
  // Look before creating anything, so a refusal leaves OUT_DIR as it was.
  DMLP_RETURN_IF_ERROR(CheckAbsentIn(plan, out));
  RunOutput output(plan);
  // metrics.jsonl first, as the reference does: a run directory looked at just
  // after start never has rank-0.jsonl without it. On failure `output` goes out
  // of scope and removes what it created (still empty). O_EXCL|O_NOFOLLOW: a
  // link planted since the check is refused, never followed.
  if (plan.process_id == 0) {
    DMLP_ASSIGN_OR_RETURN(output.metrics_fd_, out.CreateFile(kMetricsFile, "OUTPUT_EXISTS"));
    output.created_.push_back(out.PathOf(kMetricsFile));
    DMLP_ASSIGN_OR_RETURN(TerminationCleanup metrics_cleanup,
                          TerminationCleanup::Register(out.fd(), kMetricsFile, output.metrics_fd_, true));
    output.cleanups_.push_back(std::move(metrics_cleanup));
    output.metrics_file_ = ReceiptFile(output.metrics_fd_, out.PathOf(kMetricsFile), plan.process_id);
  }
  const std::string rank_name = RankFileName(plan.process_id);
  DMLP_ASSIGN_OR_RETURN(output.rank_fd_, out.CreateFile(rank_name, "OUTPUT_EXISTS"));
  output.created_.push_back(out.PathOf(rank_name));
  DMLP_ASSIGN_OR_RETURN(TerminationCleanup rank_cleanup,
                        TerminationCleanup::Register(out.fd(), rank_name.c_str(), output.rank_fd_, true));
  output.cleanups_.push_back(std::move(rank_cleanup));
  output.rank_file_ = ReceiptFile(output.rank_fd_, out.PathOf(rank_name), plan.process_id);
  // The env file last: a look at OUT_DIR never finds it without the receipts.
  const std::string env_name = EnvFileName(plan.process_id);
  DMLP_ASSIGN_OR_RETURN(output.env_fd_, out.CreateFile(env_name, "OUTPUT_EXISTS"));
  output.env_path_ = out.PathOf(env_name);
  DMLP_ASSIGN_OR_RETURN(output.env_cleanup_,
                        TerminationCleanup::Register(out.fd(), env_name.c_str(), output.env_fd_, false));
  output.image_id_ = std::move(image_id);
  output.env_ = RankEnvRecorder(output.env_fd_, output.env_path_, plan.process_id,
                                BuildDocument(ThisBuild(), output.image_id_));
  return output;
}

Result<RunOutput> RunOutput::OpenResumed(const Plan& plan, int64_t resume_step,
                                         std::vector<Receipt> prior) {
  if (static_cast<int64_t>(prior.size()) < resume_step)
    return Status::Error("RESUME_RECEIPTS_INVALID",
                         "the checkpoint is at step " + std::to_string(resume_step) +
                             " but the earlier receipts end at step " + std::to_string(prior.size()));
  DMLP_ASSIGN_OR_RETURN(RunOutput output, Open(plan));
  ResumeStageReached("created");
  output.prior_ = std::move(prior);
  for (int64_t step = 1; step <= resume_step; ++step) {
    const Receipt& receipt = output.prior_[step - 1];
    DMLP_RETURN_IF_ERROR(output.Record(step, receipt.loss, receipt.params_sha256));
    if (step == 1) ResumeStageReached("rewriting");
  }
  ResumeStageReached("rewritten");
  return output;
}

RunOutput::RunOutput(RunOutput&& other) noexcept
    : plan_(std::move(other.plan_)),
      rank_fd_(std::exchange(other.rank_fd_, -1)),
      metrics_fd_(std::exchange(other.metrics_fd_, -1)),
      env_fd_(std::exchange(other.env_fd_, -1)),
      env_path_(std::exchange(other.env_path_, std::string())),
      image_id_(std::move(other.image_id_)),
      env_(std::move(other.env_)),
      rank_file_(std::move(other.rank_file_)),
      metrics_file_(std::move(other.metrics_file_)),
      last_step_(other.last_step_),
      confirmed_replays_(other.confirmed_replays_),
      last_loss_(std::move(other.last_loss_)),
      last_hash_(std::move(other.last_hash_)),
      prior_(std::move(other.prior_)),
      created_(std::exchange(other.created_, {})),
      cleanups_(std::move(other.cleanups_)),
      env_cleanup_(std::move(other.env_cleanup_)) {}

RunOutput::~RunOutput() {
  CloseFiles();
  if (last_step_ != 0) return;
  // In the reverse of the order Open created them (docs/verifier.md), so a
  // verifier never sees rank-0.jsonl without metrics.jsonl.
  struct stat info {};
  if (!env_path_.empty() && ::lstat(env_path_.c_str(), &info) == 0 && S_ISREG(info.st_mode))
    ::unlink(env_path_.c_str());
  for (auto path = created_.rbegin(); path != created_.rend(); ++path) {
    if (::lstat(path->c_str(), &info) == 0 && S_ISREG(info.st_mode) && info.st_size == 0)
      ::unlink(path->c_str());
  }
}

void RunOutput::CloseFiles() {
  if (rank_fd_ >= 0) ::close(rank_fd_);
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
  if (env_fd_ >= 0) ::close(env_fd_);
  rank_fd_ = metrics_fd_ = env_fd_ = -1;
}

Status RunOutput::BeginEnvironment(const std::string& event, std::function<RankStack()> describe) {
  return env_.Begin(event, last_step_, std::move(describe));
}

void RunOutput::PrintMetricLine(int64_t step, const std::string& loss, const std::string& params_sha256) {
  if (metric_lines_lost_) return;
  errno = 0;
  std::printf("METRIC step=%lld loss=%s params_sha256=%s\n", static_cast<long long>(step), loss.c_str(),
              params_sha256.c_str());
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return;
  // The receipts are the record, and they are written: the job goes on, and
  // says once (stderr may still be read) that stdout lost its lines.
  metric_lines_lost_ = true;
  std::fprintf(stderr,
               "dmlp-train: warning: stdout: %s; METRIC lines from step %lld on are lost (the receipts keep "
               "every step)\n",
               std::strerror(errno != 0 ? errno : EIO), static_cast<long long>(step));
  std::fflush(stderr);
}

Status RunOutput::Record(int64_t step, const std::string& loss, const std::string& params_sha256) {
  if (step != last_step_ + 1)
    return Status::Error("METRIC_STEP_NOT_CONTIGUOUS", "step " + std::to_string(step) +
                                                           " after " + std::to_string(last_step_));
  if (step <= static_cast<int64_t>(prior_.size())) {
    const Receipt& old = prior_[step - 1];
    if (old.loss != loss || old.params_sha256 != params_sha256)
      return ReplayDiverged(step, plan_.process_id,
                            "earlier loss=" + old.loss + " params_sha256=" + old.params_sha256 +
                                ", now loss=" + loss + " params_sha256=" + params_sha256);
  }
  // Before the receipt: a restore onto older files fails it (RECEIPTS_LOST),
  // and the env line saying where the process woke up is then already out.
  DMLP_RETURN_IF_ERROR(env_.CheckRestored(last_step_));
  // The same replay, checked byte for byte against the files themselves: a
  // process restored to an earlier point finds its later lines already there.
  Receipt receipt{step, loss, params_sha256, plan_.process_id};
  DMLP_ASSIGN_OR_RETURN(LineOutcome outcome, rank_file_.Put(step, FormatReceiptLine(receipt)));
  if (metrics_fd_ >= 0) {
    receipt.rank.reset();
    DMLP_ASSIGN_OR_RETURN(LineOutcome metrics_outcome, metrics_file_.Put(step, FormatReceiptLine(receipt)));
    (void)metrics_outcome;  // a step counts once, by its rank file
    PrintMetricLine(step, loss, params_sha256);
  }
  if (outcome == LineOutcome::kConfirmed) ++confirmed_replays_;
  last_step_ = step;
  env_cleanup_ = TerminationCleanup();  // a recorded step keeps its env file
  last_loss_ = loss;
  last_hash_ = params_sha256;
  return Status::Ok();
}

Status RunOutput::Complete(const StateLayout& layout, const uint8_t* final_image,
                           const nlohmann::json& fingerprint,
                           const std::vector<int64_t>& confirmed_replays) {
  if (last_step_ != plan_.steps)
    return Status::Error("TRAINING_INCOMPLETE", "last step " + std::to_string(last_step_));
  if (plan_.process_id != 0) return Status::Ok();
  for (int fd : {rank_fd_, metrics_fd_}) {
    if (fd >= 0 && ::fsync(fd) != 0)
      return ErrnoError("IO_ERROR", "fsync receipts");
  }
  StateDigests digests = DigestStateImage(layout, final_image);
  if (digests.state != last_hash_)
    return Status::Error("INTERNAL", "final state digest differs from the last receipt");
  DMLP_RETURN_IF_ERROR(WriteStateFile(PathIn(plan_, kStateFile), layout, final_image,
                                      {{"step", std::to_string(last_step_)},
                                       {"params_sha256", digests.state},
                                       {"final_params_sha256", digests.params},
                                       {"final_opt_state_sha256", digests.opt}}));
  nlohmann::json document =
      ResultDocument(plan_, plan_.steps, last_loss_, last_hash_, digests, fingerprint,
                     confirmed_replays, image_id_);
  return WriteFileAtomically(PathIn(plan_, kResultFile), PyJsonDumps(document, 2) + "\n");
}

}  // namespace dmlp
