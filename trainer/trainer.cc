#include "trainer/trainer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/float_repr.h"
#include "trainer/backend.h"
#include "trainer/digest_pipeline.h"
#include "trainer/init.h"
#include "trainer/progress.h"
#include "trainer/rendezvous.h"
#include "trainer/run_output.h"

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

Status Train(const Plan& plan, Backend& backend, DigestPipeline& digests) {
  ProgressReporter progress(stderr, 1, plan.steps);
  const bool report = plan.process_id == 0;
  for (int64_t step = 1; step <= plan.steps; ++step) {
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

}  // namespace

Status RunTrainer(const Plan& plan) {
  DMLP_ASSIGN_OR_RETURN(StateLayout layout, StateLayout::Create(plan.model));
  DMLP_ASSIGN_OR_RETURN(RunOutput output, RunOutput::Open(plan));
  RendezvousOptions options;
  options.address = plan.coordinator_address;
  options.port = static_cast<int>(plan.coordinator_port);
  options.rank = static_cast<int>(plan.process_id);
  options.world_size = static_cast<int>(plan.num_processes);
  options.heartbeat_timeout_seconds = static_cast<int>(plan.heartbeat_timeout_seconds);
  options.plan_fingerprint = PlanFingerprint(plan);
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<Rendezvous> rendezvous, Rendezvous::Join(options));

  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                        plan.platform == Platform::kCpu
                            ? CreateCpuBackend(plan, layout, *rendezvous)
                            : CreateCudaBackend(plan, layout, *rendezvous));
  DMLP_ASSIGN_OR_RETURN(std::vector<uint8_t> initial, InitialImage(layout, plan));
  DMLP_RETURN_IF_ERROR(backend->LoadState(initial.data()));
  initial = {};

  DigestPipeline digests(*backend, layout.image_bytes(),
                         [&](int64_t step, const std::string& loss, const std::string& hash) {
                           return output.Record(step, loss, hash);
                         });
  DMLP_RETURN_IF_ERROR(digests.Start());
  DMLP_RETURN_IF_ERROR(Train(plan, *backend, digests));

  // Like the reference: result files only once every rank has all its receipts.
  DMLP_RETURN_IF_ERROR(rendezvous->Barrier("training-complete"));
  DMLP_RETURN_IF_ERROR(output.Complete(layout, digests.last_image(), RunFingerprint(plan, *backend)));
  DMLP_RETURN_IF_ERROR(rendezvous->Barrier("artifact-complete"));
  return rendezvous->Close();
}

}  // namespace dmlp
