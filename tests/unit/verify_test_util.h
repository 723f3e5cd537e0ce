// defines: TempDir, TestHash, TestLoss, RankLine, MetricsLine, WriteReferenceRun, Ran, Stdout, RunVerify,
//          FindingIds
//
// Helpers for dmlp-verify's unit tests: a scratch directory removed at the end,
// and small valid runs in the reference (JAX) format written into it.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/float_repr.h"
#include "common/py_json.h"
#include "common/receipt.h"
#include "common/sha256.h"
#include "verify/verifier.h"

namespace dmlp::verify::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dmlp-verify-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  void Write(const std::string& name, const std::string& content) const {
    std::ofstream(File(name), std::ios::binary) << content;
  }
  std::string Read(const std::string& name) const {
    std::ifstream file(File(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), {});
  }

 private:
  std::string path_;
};

inline std::string TestHash(int step, int variant = 0) {
  std::string seed = "state " + std::to_string(step) + " " + std::to_string(variant);
  return Sha256Hex(seed.data(), seed.size());
}

inline std::string TestLoss(int step, int variant = 0) {
  return Float32Repr(3.0f / static_cast<float>(step + 1) + 0.5f * static_cast<float>(variant));
}

inline std::string RankLine(int step, int rank, int variant = 0) {
  return FormatReceiptLine(Receipt{step, TestLoss(step, variant), TestHash(step, variant), rank});
}

inline std::string MetricsLine(int step, int variant = 0) {
  return FormatReceiptLine(Receipt{step, TestLoss(step, variant), TestHash(step, variant), std::nullopt});
}

/// A complete, valid run in the reference's format (no state file) of `ranks` x `steps`.
inline void WriteReferenceRun(const TempDir& dir, int ranks, int steps, bool with_result = true) {
  std::string metrics;
  for (int step = 1; step <= steps; ++step) metrics += MetricsLine(step);
  dir.Write("metrics.jsonl", metrics);
  nlohmann::json rank_files = nlohmann::json::array();
  for (int rank = 0; rank < ranks; ++rank) {
    std::string lines;
    for (int step = 1; step <= steps; ++step) lines += RankLine(step, rank);
    dir.Write("rank-" + std::to_string(rank) + ".jsonl", lines);
    rank_files.push_back("rank-" + std::to_string(rank) + ".jsonl");
  }
  if (!with_result) return;
  nlohmann::json doc = {
      {"complete", true}, {"dataset", "d"}, {"digest_cost", "c"}, {"digest_policy", "p"},
      {"final_loss", TestLoss(steps)}, {"final_opt_state_sha256", TestHash(-1)},
      {"final_params_sha256", TestHash(-2)}, {"heartbeat_timeout_seconds", 60}, {"jax_version", "0.4.35"},
      {"model", {{"processes", ranks}}}, {"optimizer", "adam"}, {"params_sha256", TestHash(steps)},
      {"plan", {{"steps", steps}}}, {"processes", ranks}, {"rank_files", rank_files}, {"steps", steps},
      {"updates_per_metric_step", 1}};
  dir.Write("result.json", PyJsonDumps(doc, 2) + "\n");
}

#ifdef DMLP_VERIFY_BINARY
/// What the dmlp-verify binary did: its exit code and its two streams.
struct Ran {
  int exit_code = -1;
  std::string out, err;
};

/// Where the child's stdout goes: a file read back into Ran::out, a pipe whose
/// reader has exited (every write fails with EPIPE), /dev/full (ENOSPC), or
/// nowhere (descriptor 1 closed, as `>&-` leaves it).
enum class Stdout { kCaptured, kReaderGone, kFull, kClosed };

/// Runs the real dmlp-verify with `args`, capturing stderr, and stdout as `stdout_to` says.
inline Ran RunVerify(std::vector<std::string> args, Stdout stdout_to = Stdout::kCaptured) {
  TempDir capture;
  args.insert(args.begin(), DMLP_VERIFY_BINARY);
  int pipe_fds[2] = {-1, -1};
  if (stdout_to == Stdout::kReaderGone) {
    if (::pipe(pipe_fds) != 0) std::abort();
    ::close(pipe_fds[0]);  // the only read end: as if its reader had exited
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen(capture.File("err").c_str(), "w", stderr)) ::_exit(125);
    int target = -1;
    if (stdout_to == Stdout::kCaptured) target = ::open(capture.File("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (stdout_to == Stdout::kReaderGone) target = pipe_fds[1];
    if (stdout_to == Stdout::kFull) target = ::open("/dev/full", O_WRONLY);
    if (stdout_to == Stdout::kClosed) {
      ::close(STDOUT_FILENO);
    } else if (target < 0 || ::dup2(target, STDOUT_FILENO) < 0) {
      ::_exit(125);
    } else {
      ::close(target);
    }
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pipe_fds[1] >= 0) ::close(pipe_fds[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return Ran{WIFEXITED(status) ? WEXITSTATUS(status) : -1, capture.Read("out"), capture.Read("err")};
}
#endif

/// The ids of the findings a report kept.
inline std::set<std::string> FindingIds(const Report& report) {
  std::set<std::string> ids;
  for (const Finding& finding : report.findings.kept()) ids.insert(finding.id);
  return ids;
}

}  // namespace dmlp::verify::testing
