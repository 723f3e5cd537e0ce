// defines: TrainOutcome, TrainBinary, FreeLocalPort, RunTrain
//
// dmlp-verify --replay runs dmlp-train as a program, never as a library:
// verify/ uses nothing of the trainer (docs/architecture.md), and an audit
// should run the binary a user would run. One rank, on this machine, in a
// work directory of the audit's own; its output goes to a log file there.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dmlp::verify {

struct TrainOutcome {
  bool ok = false;          // exited with 0
  std::string how_it_ended; // "exit code 1", "signal 9"
  std::string error_line;   // its last "dmlp-train: error: ..." line, or the log's last line
};

/// dmlp-train beside this dmlp-verify (both are built and installed together).
std::string TrainBinary();
/// A TCP port on 127.0.0.1 that was free a moment ago, for the replay's coordinator.
Result<int> FreeLocalPort();
/// Runs `binary` with exactly `environment` ("NAME=value"), stdout and stderr to `log_path`, and waits.
Result<TrainOutcome> RunTrain(const std::string& binary, const std::vector<std::string>& environment,
                              const std::string& log_path);

}  // namespace dmlp::verify
