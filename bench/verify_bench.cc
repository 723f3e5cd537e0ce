// verify_bench: how fast dmlp-verify checks a run, and how much memory it
// needs. For each size it writes a valid dmlp run (8 ranks, metrics.jsonl,
// result.json, a real state.safetensors) into a temporary directory, runs the
// dmlp-verify binary on it, and prints lines/s, MB/s and the verifier's peak
// RSS (wait4's rusage of the child, so the generator's memory is not counted).
// The files were just written, so they are read from the page cache: the
// figures are the verifier's CPU cost, not the disk's. Each size runs twice
// more with --html=FILE: on the same run, and on one where rank 3 disagrees
// at every other step (the strip's worst case); it prints the page's size.
//
//   verify_bench                 8 x 1,200 and 8 x 1,000,000 steps
//   verify_bench STEPS...        other sizes (still 8 ranks)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/float_repr.h"
#include "common/format/result_json.h"
#include "common/py_json.h"
#include "common/receipt.h"
#include "common/sha256.h"
#include "common/state_digest.h"
#include "common/state_file.h"
#include "common/state_layout.h"

namespace {

constexpr int kRanks = 8;

struct Measured {
  int exit_code = -1;
  double seconds = 0;
  long peak_rss_kib = 0;
};

// A run of kRanks x steps whose last receipt matches a real state file.
// With `alternate`, rank 3 holds another state at every odd step.
uint64_t WriteRun(const std::string& dir, int64_t steps, bool alternate = false) {
  using namespace dmlp;
  StateLayout layout = *StateLayout::Create(ModelShape{16, 32, 2, 4});
  std::vector<uint8_t> image(layout.image_bytes());
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 131 + 7);
  StateDigests final_digests = DigestStateImage(layout, image.data());
  if (!WriteStateFile(dir + "/state.safetensors", layout, image.data(), {{"step", std::to_string(steps)}}).ok())
    std::abort();
  std::vector<std::FILE*> files;
  std::vector<std::vector<char>> buffers(kRanks + 1, std::vector<char>(1 << 20));
  for (int rank = 0; rank <= kRanks; ++rank) {
    std::string name = rank < kRanks ? "rank-" + std::to_string(rank) + ".jsonl" : "metrics.jsonl";
    files.push_back(std::fopen((dir + "/" + name).c_str(), "wx"));
    if (files.back() == nullptr) std::abort();
    std::setvbuf(files.back(), buffers[rank].data(), _IOFBF, buffers[rank].size());
  }
  uint64_t bytes = 0;
  std::string loss, hash;
  for (int64_t step = 1; step <= steps; ++step) {
    loss = Float32Repr(2.5f / (1.0f + 0.001f * static_cast<float>(step % 100000)));
    hash = step == steps ? final_digests.state : Sha256Hex(&step, sizeof step);
    for (int rank = 0; rank <= kRanks; ++rank) {
      const bool odd = alternate && rank == 3 && step % 2 == 1;
      std::string line = FormatReceiptLine(Receipt{step, loss, odd ? Sha256Hex(&rank, sizeof rank) : hash,
                                                   rank < kRanks ? std::optional<int64_t>(rank) : std::nullopt});
      std::fwrite(line.data(), 1, line.size(), files[rank]);
      bytes += line.size();
    }
  }
  for (std::FILE* file : files) std::fclose(file);
  nlohmann::json rank_files = nlohmann::json::array();
  for (int rank = 0; rank < kRanks; ++rank) rank_files.push_back("rank-" + std::to_string(rank) + ".jsonl");
  nlohmann::json doc = {
      {dmlp::kResultComplete, true},
      {dmlp::kResultDataset, "bench"},
      {dmlp::kResultDigestCost, "bench"},
      {dmlp::kResultDigestPolicy, "bench"},
      {dmlp::kResultDmlpVersion, DMLP_VERSION},
      {dmlp::kResultFinalLoss, loss},
      {dmlp::kResultFinalOptStateSha256, final_digests.opt},
      {dmlp::kResultFinalParamsSha256, final_digests.params},
      {dmlp::kResultFingerprint, {{"platform", "cpu"}}},
      {dmlp::kResultHeartbeatTimeoutSeconds, 60},
      {dmlp::kResultModel, {{dmlp::kModelProcesses, kRanks}}},
      {dmlp::kResultOptimizer, dmlp::kOptimizerText},
      {dmlp::kResultParamsSha256, hash},
      {dmlp::kResultPlan, {{dmlp::kPlanSteps, steps}}},
      {dmlp::kResultProcesses, kRanks},
      {dmlp::kResultRankFiles, rank_files},
      {dmlp::kResultStateFile, "state.safetensors"},
      {dmlp::kResultSteps, steps},
      {dmlp::kResultUpdatesPerMetricStep, 1}};
  std::FILE* result = std::fopen((dir + "/" + dmlp::kResultFile).c_str(), "wx");
  std::string text = dmlp::PyJsonDumps(doc, 2) + "\n";
  std::fwrite(text.data(), 1, text.size(), result);
  std::fclose(result);
  return bytes;
}

Measured RunVerifier(const std::string& dir, const std::string& html = "") {
  Measured measured;
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* null = std::freopen("/dev/null", "w", stdout);
    (void)null;
    const std::string option = "--html=" + html;
    if (html.empty())
      ::execl(DMLP_VERIFY_BINARY, DMLP_VERIFY_BINARY, dir.c_str(), static_cast<char*>(nullptr));
    else
      ::execl(DMLP_VERIFY_BINARY, DMLP_VERIFY_BINARY, option.c_str(), dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (pid < 0 || ::wait4(pid, &status, 0, &usage) != pid) return measured;
  measured.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  measured.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  measured.peak_rss_kib = usage.ru_maxrss;
  return measured;
}

bool Bench(int64_t steps) {
  std::string dir = (std::filesystem::temp_directory_path() / "dmlp-verify-bench-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return false;
  const uint64_t bytes = WriteRun(dir, steps);
  Measured measured = RunVerifier(dir);
  std::filesystem::remove_all(dir);
  const double lines = static_cast<double>(steps) * (kRanks + 1);
  std::printf("verify %d ranks x %lld steps: %.0f lines, %.1f MB, exit %d, %.3f s, %.2f M lines/s, %.0f MB/s, "
              "peak RSS %.1f MiB\n",
              kRanks, static_cast<long long>(steps), lines, static_cast<double>(bytes) / 1e6, measured.exit_code,
              measured.seconds, lines / measured.seconds / 1e6, static_cast<double>(bytes) / 1e6 / measured.seconds,
              static_cast<double>(measured.peak_rss_kib) / 1024.0);
  std::fflush(stdout);
  return measured.exit_code == 0;
}

// The same run verified with --html (the page beside the run, as run.sh writes it).
bool BenchHtml(int64_t steps, bool alternate) {
  std::string dir = (std::filesystem::temp_directory_path() / "dmlp-verify-bench-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return false;
  WriteRun(dir, steps, alternate);
  const std::string page = dir + ".report.html";
  Measured measured = RunVerifier(dir, page);
  std::error_code error;
  const auto page_bytes = std::filesystem::file_size(page, error);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(page, error);
  std::printf("verify --html %d ranks x %lld steps%s: exit %d, %.3f s, peak RSS %.1f MiB, page %.1f KB\n", kRanks,
              static_cast<long long>(steps), alternate ? " (rank 3 differs at every other step)" : "",
              measured.exit_code, measured.seconds, static_cast<double>(measured.peak_rss_kib) / 1024.0,
              static_cast<double>(page_bytes) / 1e3);
  std::fflush(stdout);
  return measured.exit_code == (alternate ? 1 : 0);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes = {1200, 1000000};
  if (argc > 1) {
    sizes.clear();
    for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoll(argv[i], nullptr, 10));
  }
  bool ok = true;
  for (int64_t steps : sizes)
    ok = steps >= 1 && Bench(steps) && BenchHtml(steps, false) && BenchHtml(steps, true) && ok;
  return ok ? 0 : 1;
}
