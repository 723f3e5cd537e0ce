// dmlp-verify: parse -> Verify(options) -> exit code. See verify/README.md.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "common/std_streams.h"
#include "verify/html_report.h"
#include "verify/options.h"
#include "verify/report_file.h"
#include "verify/report_json.h"
#include "verify/report_text.h"
#include "verify/verifier.h"

namespace {

int Fail(const dmlp::Status& status) {
  std::fprintf(stderr, "dmlp-verify: error: %s\n", status.ToString().c_str());
  return 2;
}

// The exit code is the verdict, once stdout has its report: a reader that went
// away (EPIPE, `| head`) chose not to read on, but any other failure (a full
// disk, EFBIG) lost the report, which is trouble.
int Finish(int exit_code) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return exit_code;
  if (errno == EPIPE) return exit_code;
  return Fail(dmlp::Status::Error("IO_ERROR", std::string("write stdout: ") + std::strerror(errno != 0 ? errno : EIO)));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dmlp::verify;
  dmlp::PrepareStandardStreams();
  ParseOutcome parsed = ParseCommandLine(argc, argv);
  if (!parsed.command) {
    std::fputs(parsed.out.c_str(), stdout);
    std::fputs(parsed.err.c_str(), stderr);
    return parsed.exit_code;
  }
  const CommandLine& command = *parsed.command;
  if (command.list_checks) {
    std::fputs(FormatCheckList().c_str(), stdout);
    return 0;
  }
  if (dmlp::Status placement = CheckReportPlacement(command); !placement.ok()) return Fail(placement);
  const bool json_to_stdout = command.json_path && *command.json_path == "-";
  std::FILE* human = json_to_stdout ? stderr : stdout;

  dmlp::Result<Report> report = dmlp::Status::Error("INTERNAL", "not run");
  try {
    report = Verify(command.verify);
  } catch (const std::bad_alloc&) {
    // Memory is bounded by design (streamed receipts); this is trouble, not a verdict.
    report = dmlp::Status::Error("OUT_OF_MEMORY", "an allocation failed");
  }
  int exit_code = 2;
  nlohmann::json document;
  if (report.ok()) {
    std::fputs(FormatHumanReport(*report).c_str(), human);
    // A verdict nobody could read (ENOSPC, EIO on a redirected stdout) is trouble, not exit 0.
    if (std::fflush(human) != 0)
      return Fail(dmlp::Status::Error("IO_ERROR", std::string("write report: ") + std::strerror(errno)));
    document = ReportToJson(*report);
    exit_code = report->exit_code;
  } else {
    Fail(report.status());
    document = ErrorReportToJson(command.verify, report.status());
  }
  if (command.html_path) {
    const std::string page = report.ok() ? FormatHtmlReport(*report)
                                         : FormatHtmlErrorReport(command.verify, report.status());
    if (dmlp::Status written = WriteReportFile(*command.html_path, page); !written.ok()) return Fail(written);
  }
  if (!command.json_path) return Finish(exit_code);
  std::fflush(human);
  const std::string text = DumpReport(document);
  if (json_to_stdout) {
    std::fputs(text.c_str(), stdout);
    return Finish(exit_code);
  }
  if (dmlp::Status written = WriteReportFile(*command.json_path, text); !written.ok())
    return Fail(written);
  return Finish(exit_code);
}
