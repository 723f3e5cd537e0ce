// dmlp-launch: parse -> RunJob -> exit code. See launch/supervisor.h.
#include <unistd.h>

#include <iostream>
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

}  // namespace

int main(int argc, char** argv) {
  dmlp::Result<dmlp::CommandLine> parsed = dmlp::ParseCommandLine(argc, argv);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->print_and_exit) {
    std::cout << *parsed->print_and_exit << std::flush;
    return 0;
  }
  dmlp::Result<dmlp::LaunchConfig> config = dmlp::ResolveConfig(
      parsed->options, dmlp::Environment::FromProcess(), dmlp::DefaultCommand());
  if (!config.ok()) return Fail(config.status());
  dmlp::FdConsole console(STDOUT_FILENO, STDERR_FILENO);
  dmlp::Result<dmlp::LaunchReport> report = dmlp::RunJob(*config, console);
  if (!report.ok()) return Fail(report.status());
  for (const std::string& line : dmlp::SummaryLines(*report)) console.Notice(line);
  return report->ExitCode();
}
