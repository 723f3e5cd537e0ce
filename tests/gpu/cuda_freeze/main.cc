// cuda_freeze: freezes and thaws the CUDA state of running processes
// (cuda_freeze.h). The GPU kit's freeze row runs it around a CRIU dump.
//
//   cuda_freeze freeze PID... [--lock-timeout-ms MS]   lock + checkpoint each
//   cuda_freeze thaw PID...                            restore + unlock each
//   cuda_freeze state PID...                           print each one's state
//
// Exit status: 0 done; 3 FREEZE_UNSUPPORTED (this machine cannot: no driver,
// no GPU, a driver without the API; the reason on stderr); 1 any other
// failure; 2 usage. A freeze that fails for one process thaws those it froze
// before, so the job is never left half frozen.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "tests/gpu/cuda_freeze/cuda_freeze.h"

namespace dmlp::freeze {
namespace {

int Fail(const Status& status) {
  std::fprintf(stderr, "cuda_freeze: error: %s\n", status.ToString().c_str());
  return status.code() == "FREEZE_UNSUPPORTED" ? 3 : 1;
}

Status Run(const std::string& action, const std::vector<int>& pids, unsigned lock_timeout_ms) {
  DMLP_ASSIGN_OR_RETURN(const CudaCheckpointApi api, CudaCheckpointApi::Load());
  std::vector<int> frozen;
  for (const int pid : pids) {
    Status done;
    if (action == "freeze") {
      done = Freeze(api, pid, lock_timeout_ms);
      if (!done.ok()) {
        for (const int earlier : frozen) (void)Thaw(api, earlier);
        return done;
      }
      frozen.push_back(pid);
    } else if (action == "thaw") {
      DMLP_RETURN_IF_ERROR(Thaw(api, pid));
    }
    DMLP_ASSIGN_OR_RETURN(const CUprocessState state, api.State(pid));
    std::string line = "cuda_freeze: pid " + std::to_string(pid) + ": " + ProcessStateName(state);
    if (Result<int> tid = api.RestoreThreadId(pid); tid.ok())
      line += " (restore thread " + std::to_string(*tid) + ")";
    std::printf("%s\n", line.c_str());
  }
  return Status::Ok();
}

int Main(int argc, char** argv) {
  CLI::App app{"cuda_freeze: freeze and thaw processes' CUDA state (driver checkpoint API)"};
  std::string action;
  std::vector<int> pids;
  unsigned lock_timeout_ms = 10000;
  app.add_option("action", action, "freeze, thaw or state")
      ->required()
      ->check(CLI::IsMember({"freeze", "thaw", "state"}));
  app.add_option("pids", pids, "process ids")->required()->check(CLI::PositiveNumber);
  app.add_option("--lock-timeout-ms", lock_timeout_ms,
                 "give up locking a process after this long (0: no limit)");
  CLI11_PARSE(app, argc, argv);
  const Status status = Run(action, pids, lock_timeout_ms);
  return status.ok() ? 0 : Fail(status);
}

}  // namespace
}  // namespace dmlp::freeze

int main(int argc, char** argv) { return dmlp::freeze::Main(argc, argv); }
