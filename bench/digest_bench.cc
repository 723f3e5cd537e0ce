// digest_bench: the digest pipeline's throughput against its hasher count K
// (DIGEST_THREADS), on the state image of the spec's model (113.6 MB), with
// P pipelines at once (the ranks of one host). It prints one line per K:
//
//   digest_bench pipelines=P threads=K image_mb=113.6 steps=S gb_per_s=G ms_per_step=M
//
// gb_per_s is what one pipeline hashes (state bytes per second of wall time),
// ms_per_step its inverse per image; the host's total is P times that. The
// snapshot is a memcpy on the submitting thread, as on the CPU platform (on
// CUDA it is a DMA that costs the host nothing), so a pipeline here is a rank
// whose device computes infinitely fast: the figure is the digest's ceiling.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "common/state_layout.h"
#include "trainer/backend.h"
#include "trainer/output/digest_pipeline.h"

namespace dmlp {
namespace {

using Clock = std::chrono::steady_clock;

void FreeHost(uint8_t* buffer) { delete[] buffer; }

/// A backend whose state is a fixed image: a snapshot copies it (as backend_cpu does).
class ImageBackend final : public Backend {
 public:
  explicit ImageBackend(size_t bytes) : image_(bytes) {
    for (size_t i = 0; i < bytes; ++i) image_[i] = uint8_t(i * 2654435761u >> 24);
  }
  nlohmann::json Fingerprint() const override { return nlohmann::json::object(); }
  DeviceIdentity Device() const override { return {"cpu", "test", "", "", ""}; }
  Result<SnapshotBuffer> AllocateSnapshotBuffer() override {
    return SnapshotBuffer(new uint8_t[image_.size()], &FreeHost);
  }
  Status LoadState(const uint8_t*) override { return Status::Ok(); }
  Status ComputePartials(int64_t, int64_t) override { return Status::Ok(); }
  Status ReduceAndApply() override { return Status::Ok(); }
  Result<float> LastLoss() override { return 0.0f; }
  Result<SnapshotWaiter> BeginSnapshot(uint8_t* buffer) override {
    std::memcpy(buffer, image_.data(), image_.size());
    return SnapshotWaiter([] { return Status::Ok(); });
  }

 private:
  std::vector<uint8_t> image_;
};

/// Seconds one pipeline of `threads` hashers takes for `steps` steps.
Result<double> RunPipeline(size_t bytes, int threads, int steps) {
  ImageBackend backend(bytes);
  DigestPipeline pipeline(
      backend, bytes,
      [](int64_t, const std::string&, const std::string&, const uint8_t*) { return Status::Ok(); },
      threads);
  DMLP_RETURN_IF_ERROR(pipeline.Start());
  const Clock::time_point start = Clock::now();
  for (int step = 1; step <= steps; ++step) DMLP_RETURN_IF_ERROR(pipeline.Submit(step, "0.0"));
  DMLP_RETURN_IF_ERROR(pipeline.Drain());
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Main(int argc, char** argv) {
  CLI::App app{"digest_bench: digest pipeline throughput against DIGEST_THREADS"};
  std::vector<int> thread_counts{1, 2, 4, 8};
  int pipelines = 1;
  int steps = 16;
  app.add_option("--threads", thread_counts, "hasher counts K to measure")->delimiter(',');
  app.add_option("--pipelines", pipelines, "pipelines at once (ranks on the host)")
      ->check(CLI::Range(1, 64));
  app.add_option("--steps", steps, "steps per pipeline and K")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);

  Result<StateLayout> layout = StateLayout::Create(ModelShape{512, 2048, 3, 10});
  if (!layout.ok()) return 2;
  const size_t bytes = layout->image_bytes();
  for (int threads : thread_counts) {
    std::vector<Result<double>> seconds(pipelines, 0.0);
    std::vector<std::thread> ranks;
    for (int p = 0; p < pipelines; ++p)
      ranks.emplace_back([&, p] { seconds[p] = RunPipeline(bytes, threads, steps); });
    for (std::thread& rank : ranks) rank.join();
    double slowest = 0;
    for (const Result<double>& result : seconds) {
      if (!result.ok()) {
        std::fprintf(stderr, "digest_bench: error: %s\n", result.status().ToString().c_str());
        return 1;
      }
      slowest = std::max(slowest, *result);
    }
    std::printf("digest_bench pipelines=%d threads=%d image_mb=%.1f steps=%d gb_per_s=%.3f "
                "ms_per_step=%.1f\n",
                pipelines, threads, double(bytes) / 1e6, steps,
                double(bytes) * steps / slowest / 1e9, slowest / steps * 1e3);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace dmlp

int main(int argc, char** argv) { return dmlp::Main(argc, argv); }
