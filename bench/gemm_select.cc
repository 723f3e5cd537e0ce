// gemm_select: measures the CPU BLAS candidates for the CPU platform's SGEMM
// (speed on the MLP's shapes and bit-stability) and prints the figures the
// choice in trainer/cpu/gemm_cpu.cc rests on.
//
//   gemm_select [--rounds N] [--threads 1,2] [--only openblas/SkylakeX,blis/skx,...]
//
// Every (candidate, threads) pair runs in its own worker process (this program
// re-executed with --worker) with the selection variables set before the
// library loads; rounds interleave the candidates so a burst of load from
// other work on the machine hits them all alike, and the table shows medians.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/median.h"
#include "bench/gemm_select_worker.h"

extern char** environ;

namespace dmlp::bench {
namespace {

struct Candidate {
  std::string library;  // openblas | blis | onednn
  std::string kernel;   // the requested kernel, "auto" for the library's own detection
  std::string Name() const { return library + "/" + kernel; }
};

// What one worker run reported.
struct WorkerRun {
  bool ok = false;
  std::string library, kernel;
  int threads = 0;
  std::vector<ShapeResult> shapes;
};

const std::vector<Candidate> kAllCandidates = {
    {"openblas", "auto"},  {"openblas", "SkylakeX"}, {"openblas", "Cooperlake"},
    {"openblas", "Haswell"}, {"blis", "auto"},       {"blis", "skx"},
    {"blis", "haswell"},   {"blis", "generic"},      {"onednn", "auto"},
    {"onednn", "avx2"}};

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);) parts.push_back(part);
  return parts;
}

// The environment minus every variable that could steer a candidate's kernel or threads.
std::vector<std::string> CleanEnvironment() {
  static const char* kPrefixes[] = {"OPENBLAS_", "GOTO", "BLIS_", "OMP_", "GOMP_", "KMP_",
                                    "DNNL_",     "ONEDNN_"};
  std::vector<std::string> kept;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    bool steer = false;
    for (const char* prefix : kPrefixes) steer |= std::strncmp(*entry, prefix, std::strlen(prefix)) == 0;
    if (!steer) kept.emplace_back(*entry);
  }
  return kept;
}

WorkerRun RunWorker(const Candidate& candidate, int threads) {
  std::vector<std::string> args = {"/proc/self/exe", "--worker", candidate.library,
                                   candidate.kernel, std::to_string(threads)};
  std::vector<std::string> env = CleanEnvironment();
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);

  WorkerRun run;
  int fds[2];
  if (pipe(fds) != 0) return run;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    return run;
  }
  std::string output;
  char chunk[4096];
  for (ssize_t got; (got = read(fds[0], chunk, sizeof chunk)) > 0;) output.append(chunk, got);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  for (const std::string& line : Split(output, '\n')) {
    std::vector<std::string> f = Split(line, ' ');
    if (f.empty()) continue;
    if (f[0] == "library") run.library = line.substr(8);
    if (f[0] == "kernel" && f.size() > 1) run.kernel = f[1];
    if (f[0] == "threads" && f.size() > 1) run.threads = std::atoi(f[1].c_str());
    if (f[0] == "shape" && f.size() == 7) {
      run.shapes.push_back(
          {std::atof(f[2].c_str()), std::atof(f[3].c_str()), f[4], f[5] == "1", f[6] == "1"});
    }
  }
  run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
           run.shapes.size() == MlpGemmShapes().size();
  return run;
}

std::string LoadAverage() {
  std::ifstream file("/proc/loadavg");
  std::string one, five;
  file >> one >> five;
  return one + " " + five;
}

// Case-insensitive: OpenBLAS names cores "SkylakeX", BLIS "skx".
bool SameName(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

struct Options {
  int rounds = 3;
  std::vector<int> threads = {1, 2};
  std::vector<Candidate> candidates = kAllCandidates;
};

bool ParseOptions(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    std::string value = argv[++i];
    if (arg == "--rounds") {
      options.rounds = std::atoi(value.c_str());
      if (options.rounds < 1) return false;
    } else if (arg == "--threads") {
      options.threads.clear();
      for (const auto& t : Split(value, ',')) options.threads.push_back(std::atoi(t.c_str()));
    } else if (arg == "--only") {
      options.candidates.clear();
      for (const auto& name : Split(value, ',')) {
        auto slash = name.find('/');
        if (slash == std::string::npos) return false;
        options.candidates.push_back({name.substr(0, slash), name.substr(slash + 1)});
      }
    } else {
      return false;
    }
  }
  return true;
}

using RunKey = std::pair<size_t, int>;  // candidate index, threads

// One speed table: a row per MLP shape, a column per candidate, a cell with the
// median over rounds for each thread count in `threads` ("a/b").
void PrintSpeedTable(const char* title, const std::vector<int>& threads, bool cpu_time,
                     const Options& options,
                     const std::map<RunKey, std::vector<WorkerRun>>& runs) {
  std::vector<GemmShape> shapes = MlpGemmShapes();
  std::printf("\n%s\n%-22s", title, "shape");
  for (const auto& c : options.candidates) std::printf(" %13.13s", c.Name().c_str());
  std::printf("   m x n x k\n");
  for (size_t s = 0; s < shapes.size(); ++s) {
    if (!shapes[s].speed) continue;
    std::printf("%-22s", shapes[s].name.c_str());
    for (size_t c = 0; c < options.candidates.size(); ++c) {
      std::string cell;
      for (int t : threads) {
        std::vector<double> gflops;
        for (const auto& run : runs.at({c, t})) {
          if (run.ok) gflops.push_back(cpu_time ? run.shapes[s].cpu_gflops : run.shapes[s].gflops);
        }
        char text[16];
        std::snprintf(text, sizeof text, "%.0f", Median(gflops));
        cell += (cell.empty() ? "" : "/") + std::string(text);
      }
      std::printf(" %13s", cell.c_str());
    }
    std::printf("   %dx%dx%d %c%c\n", shapes[s].m, shapes[s].n, shapes[s].k,
                shapes[s].transpose_a ? 'T' : 'N', shapes[s].transpose_b ? 'T' : 'N');
  }
}

// The floor the trainer's benchmark divides by: the 512x2048x2048 forward GEMM
// (batch 512 through a 2048-wide hidden layer), median and best over rounds.
void PrintFloor(const Options& options, const std::map<RunKey, std::vector<WorkerRun>>& runs) {
  std::vector<GemmShape> shapes = MlpGemmShapes();
  size_t floor_shape = 0;
  while (floor_shape < shapes.size() && shapes[floor_shape].name != "n512 W2048 hid fwd") ++floor_shape;
  if (floor_shape == shapes.size()) return;
  const double flops = 2.0 * 512 * 2048 * 2048;
  std::printf("\n512x2048x2048 NN (%.2f GFLOP): GFLOP/s median [best], ms per call at the median\n",
              flops / 1e9);
  for (size_t c = 0; c < options.candidates.size(); ++c) {
    std::printf("%-20s", options.candidates[c].Name().c_str());
    for (int t : options.threads) {
      std::vector<double> wall, cpu;
      for (const auto& run : runs.at({c, t})) {
        if (!run.ok) continue;
        wall.push_back(run.shapes[floor_shape].gflops);
        cpu.push_back(run.shapes[floor_shape].cpu_gflops);
      }
      if (wall.empty()) continue;
      std::printf("  t%d wall %5.0f [%5.0f] %6.1f ms", t, Median(wall),
                  *std::max_element(wall.begin(), wall.end()), flops / Median(wall) / 1e6);
      if (t == 1) std::printf(", cpu %5.0f [%5.0f]", Median(cpu), *std::max_element(cpu.begin(), cpu.end()));
    }
    std::printf("\n");
  }
}

// Bit-stability per candidate: repeated calls, buffer layout, rounds (fresh
// processes), and thread counts (every shape, including the odd ones).
void PrintStabilityTable(const Options& options,
                         const std::map<RunKey, std::vector<WorkerRun>>& runs) {
  std::vector<GemmShape> shapes = MlpGemmShapes();
  std::printf("\nBit-stability (shapes with identical bytes / shapes checked):\n");
  std::printf("%-20s %-28s %9s %9s %9s %9s\n", "candidate", "pinned as", "repeat", "layout",
              "rounds", "threads");
  for (size_t c = 0; c < options.candidates.size(); ++c) {
    int repeat = 0, layout = 0, rounds = 0, across = 0, checks = 0;
    std::string pinned;
    std::vector<std::string> differing;
    bool all_ok = true;
    for (int t : options.threads) {
      for (const auto& run : runs.at({c, t})) {
        all_ok &= run.ok;
        if (!run.ok) continue;
        pinned = run.kernel + " " + run.library.substr(0, run.library.find(' ', 9));
        if (run.threads != t) pinned += " THREADS=" + std::to_string(run.threads);
      }
    }
    if (!all_ok) {
      std::printf("%-20s a worker failed\n", options.candidates[c].Name().c_str());
      continue;
    }
    for (size_t s = 0; s < shapes.size(); ++s) {
      ++checks;
      bool r = true, l = true, same_rounds = true, same_threads = true;
      const std::string& reference = runs.at({c, options.threads[0]})[0].shapes[s].hash;
      for (int t : options.threads) {
        const std::string& first = runs.at({c, t})[0].shapes[s].hash;
        for (const auto& run : runs.at({c, t})) {
          r &= run.shapes[s].repeat_ok;
          l &= run.shapes[s].layout_ok;
          same_rounds &= run.shapes[s].hash == first;
        }
        same_threads &= first == reference;
      }
      repeat += r;
      layout += l;
      rounds += same_rounds;
      across += same_threads;
      if (!same_threads) differing.push_back(shapes[s].name);
    }
    auto cell = [checks](int n) { return std::to_string(n) + "/" + std::to_string(checks); };
    std::printf("%-20s %-28s %9s %9s %9s %9s\n", options.candidates[c].Name().c_str(),
                pinned.c_str(), cell(repeat).c_str(), cell(layout).c_str(), cell(rounds).c_str(),
                cell(across).c_str());
    for (size_t i = 0; i < differing.size() && i < 4; ++i) {
      std::printf("%20s   threads differ: %s\n", "", differing[i].c_str());
    }
    if (!SameName(options.candidates[c].kernel, "auto") &&
        !SameName(options.candidates[c].kernel, pinned.substr(0, pinned.find(' '))) &&
        options.candidates[c].library != "onednn") {
      std::printf("%20s   NOT PINNED: asked for %s\n", "", options.candidates[c].kernel.c_str());
    }
  }
}

int Run(const Options& options) {
  std::printf("gemm_select: %ld online CPUs; OpenBLAS %s; BLIS %s; oneDNN %s\n",
              sysconf(_SC_NPROCESSORS_ONLN), DMLP_OPENBLAS_SO, DMLP_BLIS_SO, DMLP_DNNL_SO);
  std::map<RunKey, std::vector<WorkerRun>> runs;
  for (int round = 1; round <= options.rounds; ++round) {
    std::printf("round %d: load average before %s", round, LoadAverage().c_str());
    for (size_t c = 0; c < options.candidates.size(); ++c) {
      for (int t : options.threads) {
        WorkerRun run = RunWorker(options.candidates[c], t);
        if (!run.ok) {
          std::printf("\n  %s threads %d: worker failed", options.candidates[c].Name().c_str(), t);
        }
        runs[{c, t}].push_back(std::move(run));
      }
    }
    std::printf(", after %s\n", LoadAverage().c_str());
    std::fflush(stdout);
  }
  std::string threads_list;
  for (int t : options.threads) threads_list += (threads_list.empty() ? "" : "/") + std::to_string(t);
  if (std::find(options.threads.begin(), options.threads.end(), 1) != options.threads.end()) {
    PrintSpeedTable("GFLOP/s by CPU time, 1 thread (the single-core rate, robust to other load on "
                    "the machine):", {1}, true, options, runs);
  }
  PrintSpeedTable(("GFLOP/s by wall-clock time, threads " + threads_list + ":").c_str(),
                  options.threads, false, options, runs);
  PrintFloor(options, runs);
  PrintStabilityTable(options, runs);
  return 0;
}

}  // namespace
}  // namespace dmlp::bench

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--worker") == 0) {
    return dmlp::bench::RunGemmWorker(argv[2], argv[3], std::atoi(argv[4]));
  }
  dmlp::bench::Options options;
  if (!dmlp::bench::ParseOptions(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: gemm_select [--rounds N] [--threads 1,2] [--only lib/kernel,...]\n");
    return 2;
  }
  return dmlp::bench::Run(options);
}
