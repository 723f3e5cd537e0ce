// dmlp_draws: writes dmlp's own samples and initial parameters for one plan,
// as the platform makes them, for the GPU kit's fidelity row
// (tests/gpu/fidelity_row.sh), which holds them against jax's on XLA:GPU and
// XLA:CPU (fidelity_jax.py).
//
//   dmlp_draws --platform cpu|cuda [--seed 42 --features 512 --width 2048
//              --layers 3 --classes 10 --batch 4096 --step 1 --microbatch 0] DIR
//
// DIR (created if missing) gets, little-endian:
//   samples.f32  global samples 0..BATCH-1 of (step, microbatch), [BATCH][FEATURES]
//   labels.i32   their labels, [BATCH]
//   init.f32     the initial parameters, canonical layout (common/state_layout.h)
//   definition.txt  kDataDefinitionId (trainer/math/data_definition.h): the jax and
//                flax versions whose bits these are
// from GenerateSamples/InitParams (cpu) or GenerateSamplesOnDevice/
// InitParamsOnDevice on device 0 (cuda): the very functions the trainer calls.
// Exit status: 0 written; 3 the platform is not here (a build without CUDA,
// no GPU or no driver: the reason on stderr); 1 any other failure; 2 usage.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_util.h"
#include "common/state_layout.h"
#include "common/status.h"
#include "trainer/math/data.h"
#include "trainer/math/data_definition.h"
#include "trainer/math/init.h"

#if DMLP_DRAWS_CUDA
#include "trainer/cuda/cuda_check.h"
#include "trainer/cuda/data_gen.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/device_select.h"
#include "trainer/cuda/init_gen.h"
#endif

namespace dmlp {
namespace {

struct DrawsPlan {
  int64_t seed = 42;
  ModelShape model{512, 2048, 3, 10};
  int64_t batch = 4096;
  int64_t step = 1;
  int64_t microbatch = 0;
};

struct Draws {
  std::vector<float> samples;
  std::vector<int32_t> labels;
  std::vector<float> init;
};

Status DrawOnCpu(const DrawsPlan& plan, const SampleSpec& spec, const StateLayout& layout,
                 Draws& draws) {
  GenerateSamples(spec, plan.step, plan.microbatch, 0, plan.batch, draws.samples.data(),
                  draws.labels.data());
  return InitParams(layout, static_cast<uint32_t>(plan.seed), draws.init.data());
}

#if DMLP_DRAWS_CUDA
/// CUDA_UNAVAILABLE (the trainer's words) when no device can be used, else CUDA_ERROR.
Status DrawOnCuda(const DrawsPlan& plan, const SampleSpec& spec, const StateLayout& layout,
                  Draws& draws) {
  DMLP_RETURN_IF_ERROR(cuda::VisibleDeviceCount().status());
  CUDA_CHECK(cudaSetDevice(0));
  DMLP_ASSIGN_OR_RETURN(auto samples, cuda::DeviceBuffer<float>::Create(draws.samples.size()));
  DMLP_ASSIGN_OR_RETURN(auto labels, cuda::DeviceBuffer<int32_t>::Create(draws.labels.size()));
  DMLP_ASSIGN_OR_RETURN(auto init, cuda::DeviceBuffer<float>::Create(draws.init.size()));
  DMLP_RETURN_IF_ERROR(cuda::GenerateSamplesOnDevice(spec, plan.step, plan.microbatch, 0,
                                                     plan.batch, samples.get(), labels.get(),
                                                     nullptr));
  DMLP_RETURN_IF_ERROR(
      cuda::InitParamsOnDevice(layout, static_cast<uint32_t>(plan.seed), init.get(), nullptr));
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
  CUDA_CHECK(cudaMemcpy(draws.samples.data(), samples.get(), samples.bytes(),
                        cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(draws.labels.data(), labels.get(), labels.bytes(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(draws.init.data(), init.get(), init.bytes(), cudaMemcpyDeviceToHost));
  return Status::Ok();
}
#endif

template <typename T>
std::string_view Bytes(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

Status Run(const std::string& platform, const DrawsPlan& plan, const std::string& dir) {
  if (plan.seed < 0 || plan.seed > UINT32_MAX)
    return Status::Error("ENV_INVALID", "SEED must be in [0, 2^32 - 1]");
  const SampleSpec spec{static_cast<uint32_t>(plan.seed), plan.model.features, plan.model.classes};
  DMLP_RETURN_IF_ERROR(CheckSampleLimits(spec, plan.batch, plan.step, plan.microbatch + 1));
  DMLP_ASSIGN_OR_RETURN(const StateLayout layout, StateLayout::Create(plan.model));
  Draws draws;
  draws.samples.resize(static_cast<size_t>(plan.batch * plan.model.features));
  draws.labels.resize(static_cast<size_t>(plan.batch));
  draws.init.resize(layout.parameter_count());
  if (platform == "cpu") {
    DMLP_RETURN_IF_ERROR(DrawOnCpu(plan, spec, layout, draws));
  } else {
#if DMLP_DRAWS_CUDA
    DMLP_RETURN_IF_ERROR(DrawOnCuda(plan, spec, layout, draws));
#else
    return Status::Error("CUDA_UNAVAILABLE", "this dmlp_draws was built without CUDA");
#endif
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Status::Error("IO_ERROR", "mkdir " + dir + ": " + std::strerror(errno));
  DMLP_RETURN_IF_ERROR(WriteFileAtomically(dir + "/samples.f32", Bytes(draws.samples)));
  DMLP_RETURN_IF_ERROR(WriteFileAtomically(dir + "/labels.i32", Bytes(draws.labels)));
  DMLP_RETURN_IF_ERROR(WriteFileAtomically(dir + "/init.f32", Bytes(draws.init)));
  DMLP_RETURN_IF_ERROR(
      WriteFileAtomically(dir + "/definition.txt", std::string(kDataDefinitionId) + "\n"));
  std::printf("dmlp_draws: %s: %lld samples x %lld features, %zu parameters -> %s\n",
              platform.c_str(), static_cast<long long>(plan.batch),
              static_cast<long long>(plan.model.features), layout.parameter_count(), dir.c_str());
  return Status::Ok();
}

int Main(int argc, char** argv) {
  CLI::App app{"dmlp_draws: dmlp's samples and initial parameters for one plan, as files"};
  std::string platform, dir;
  DrawsPlan plan;
  app.add_option("--platform", platform, "cpu or cuda")
      ->required()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--seed", plan.seed)->check(CLI::NonNegativeNumber);
  app.add_option("--features", plan.model.features)->check(CLI::PositiveNumber);
  app.add_option("--width", plan.model.width)->check(CLI::PositiveNumber);
  app.add_option("--layers", plan.model.layers)->check(CLI::NonNegativeNumber);
  app.add_option("--classes", plan.model.classes)->check(CLI::PositiveNumber);
  app.add_option("--batch", plan.batch)->check(CLI::PositiveNumber);
  app.add_option("--step", plan.step)->check(CLI::PositiveNumber);
  app.add_option("--microbatch", plan.microbatch)->check(CLI::NonNegativeNumber);
  app.add_option("dir", dir, "where to write samples.f32, labels.i32, init.f32")->required();
  CLI11_PARSE(app, argc, argv);
  const Status status = Run(platform, plan, dir);
  if (status.ok()) return 0;
  std::fprintf(stderr, "dmlp_draws: error: %s\n", status.ToString().c_str());
  return status.code() == "CUDA_UNAVAILABLE" ? 3 : 1;
}

}  // namespace
}  // namespace dmlp

int main(int argc, char** argv) { return dmlp::Main(argc, argv); }
