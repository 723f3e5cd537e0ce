// dmlp-launch: parse -> RunJob -> exit code. See launch/supervisor.h.
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <new>
#include <string>

#include "common/env.h"
#include "launch/command_path.h"
#include "launch/console.h"
#include "launch/launch_errors.h"
#include "launch/options.h"
#include "launch/run_summary.h"
#include "launch/supervisor.h"

namespace {

int Fail(const dmlp::Status& status) {
  std::cerr << "dmlp-launch: error: " << status.ToString() << std::endl;
  return dmlp::ExitCodeForError(status);
}

// The ranks' outcome comes first; a console that lost lines turns a success
// into the launcher's own error (125), as a tool whose output failed should.
int ExitCode(const dmlp::LaunchReport& report, const dmlp::FdConsole& console) {
  const int ranks_code = report.ExitCode();
  if (!console.write_error()) return ranks_code;
  // Said on stderr when it still takes lines (the failure may have been stdout's).
  Fail(dmlp::Status::Error(dmlp::kOutputWriteFailed,
                           *console.write_error() +
                               "; later console lines were lost (--log-dir keeps every rank's)"));
  return ranks_code != 0 ? ranks_code : dmlp::kExitInternal;
}

int Run(int argc, char** argv) {
  dmlp::Result<dmlp::CommandLine> parsed = dmlp::ParseCommandLine(argc, argv);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->print_and_exit) {
    std::cout << *parsed->print_and_exit << std::flush;
    return 0;
  }
  const dmlp::Environment environment = dmlp::Environment::FromProcess();
  std::string default_command;
  if (parsed->options.command.empty()) {
    dmlp::Result<std::string> beside_us = dmlp::DefaultCommand(argv[0] ? argv[0] : "", environment);
    if (!beside_us.ok()) return Fail(beside_us.status());
    default_command = *beside_us;
  }
  dmlp::Result<dmlp::LaunchConfig> config =
      dmlp::ResolveConfig(parsed->options, environment, default_command);
  if (!config.ok()) return Fail(config.status());
  dmlp::FdConsole console(STDOUT_FILENO, STDERR_FILENO);
  dmlp::Result<dmlp::LaunchReport> report = dmlp::RunJob(*config, console);
  if (!report.ok()) return Fail(report.status());
  for (const std::string& line : dmlp::SummaryLines(*report)) console.Notice(line);
  return ExitCode(*report, console);
}

}  // namespace

int main(int argc, char** argv) {
  // Output past RLIMIT_FSIZE must fail the write (EFBIG, reported) rather than
  // kill the supervisor of N ranks with SIGXFSZ. Ranks get SIG_DFL back (rank_process.cc).
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return Run(argc, argv);
  } catch (const std::bad_alloc&) {
    return Fail(dmlp::Status::Error(dmlp::kOutOfMemory, "an allocation failed"));
  }
}
