// digest_bench: the digest pipeline's throughput against its hasher count K
// (DIGEST_THREADS), on the state image of the spec's model (113.6 MB), with
// P pipelines at once (the ranks of one host): bench/digest_sweep.h. It
// prints one line per (K, P):
//
//   digest_sweep threads=K image_mb=113.6 pipelines=P gb_per_s=G ms_per_step=M
//
// gb_per_s is what one pipeline hashes (state bytes per second of wall time),
// ms_per_step its inverse per image; the host's total is P times that.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "bench/digest_sweep.h"
#include "common/state_layout.h"

namespace dmlp {
namespace {

int Main(int argc, char** argv) {
  CLI::App app{"digest_bench: digest pipeline throughput against DIGEST_THREADS"};
  std::vector<int> thread_counts = bench::kSweepThreads;
  std::vector<int> pipeline_counts{1, bench::kHostRanks};
  int steps = 16;
  size_t image_bytes = 0;
  app.add_option("--threads", thread_counts, "hasher counts K to measure")
      ->delimiter(',')
      ->check(CLI::Range(1, 64));
  app.add_option("--pipelines", pipeline_counts, "pipelines at once (ranks on the host)")
      ->delimiter(',')
      ->check(CLI::Range(1, 64));
  app.add_option("--steps", steps, "steps per pipeline and K")->check(CLI::Range(1, 100000));
  app.add_option("--image-bytes", image_bytes, "state image size (default: the spec's model)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 34));
  CLI11_PARSE(app, argc, argv);

  if (image_bytes == 0) {
    Result<StateLayout> layout = StateLayout::Create(ModelShape{512, 2048, 3, 10});
    if (!layout.ok()) return 2;
    image_bytes = layout->image_bytes();
  }
  for (int pipelines : pipeline_counts) {
    for (int threads : thread_counts) {
      Result<bench::HostDigestRate> rate =
          bench::MeasureHostDigest(image_bytes, threads, pipelines, steps);
      if (!rate.ok()) {
        std::fprintf(stderr, "digest_bench: error: %s\n", rate.status().ToString().c_str());
        return 1;
      }
      std::printf("%s steps=%d\n", bench::SweepLine(threads, image_bytes, pipelines, *rate).c_str(),
                  steps);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace dmlp

int main(int argc, char** argv) { return dmlp::Main(argc, argv); }
