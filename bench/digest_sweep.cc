#include "bench/digest_sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "trainer/backend.h"
#include "trainer/output/digest_pipeline.h"

namespace dmlp::bench {
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

}  // namespace

Result<HostDigestRate> MeasureHostDigest(size_t image_bytes, int threads, int pipelines,
                                         int steps) {
  std::vector<Result<double>> seconds(pipelines, 0.0);
  std::vector<std::thread> ranks;
  for (int p = 0; p < pipelines; ++p)
    ranks.emplace_back([&, p] { seconds[p] = RunPipeline(image_bytes, threads, steps); });
  for (std::thread& rank : ranks) rank.join();
  double slowest = 0;
  for (const Result<double>& result : seconds) {
    DMLP_RETURN_IF_ERROR(result.status());
    slowest = std::max(slowest, *result);
  }
  HostDigestRate rate;
  rate.gb_per_s = double(image_bytes) * steps / slowest / 1e9;
  rate.ms_per_step = slowest / steps * 1e3;
  return rate;
}

std::string SweepLine(int threads, size_t image_bytes, int pipelines, const HostDigestRate& rate,
                      const std::string& extra) {
  char line[256];
  std::snprintf(line, sizeof line,
                "digest_sweep threads=%d image_mb=%.1f pipelines=%d gb_per_s=%.3f ms_per_step=%.1f",
                threads, double(image_bytes) / 1e6, pipelines, rate.gb_per_s, rate.ms_per_step);
  return line + extra;
}

}  // namespace dmlp::bench
