// dmlp-verify: parse -> Verify(options) -> exit code. See verify/README.md.
//
// One rule for what it prints (docs/verifier.md, "Exit codes"): the exit code
// is the verdict once each report is written or nobody reads it. A reader that
// went away (EPIPE: `| head`) and a stream the caller closed (`>&-`, which
// PrepareStandardStreams points at /dev/null) chose not to read; a report
// lost on its way to a reader (ENOSPC on /dev/full or a full disk, EIO, EFBIG)
// is trouble: exit 2, IO_ERROR. So is a --json=FILE or --html=FILE not written,
// except a page asked for with --html-optional: it is an extra, and one refused
// or not written costs a warning and the page, never the verdict.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "common/errno_error.h"
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

// Writes all of `text` to `stream` (stdout or stderr) and flushes it; a reader that went away is no error.
dmlp::Status Emit(std::FILE* stream, std::string_view text) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stream) == text.size() && std::fflush(stream) == 0)
    return dmlp::Status::Ok();
  const int error = errno != 0 ? errno : EIO;
  std::clearerr(stream);
  if (error == EPIPE) return dmlp::Status::Ok();
  return dmlp::ErrnoError("IO_ERROR", stream == stdout ? "write stdout" : "write stderr", error);
}

// Under --html-optional: says why the page is not there, on stderr.
void WarnPageNotWritten(const dmlp::Status& status) {
  std::fprintf(stderr, "dmlp-verify: warning: --html-optional: no report written: %s\n", status.detail().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dmlp::verify;
  dmlp::PrepareStandardStreams();
  ParseOutcome parsed = ParseCommandLine(argc, argv);
  if (!parsed.command) {
    std::fputs(parsed.err.c_str(), stderr);
    if (dmlp::Status written = Emit(stdout, parsed.out); !written.ok()) return Fail(written);
    return parsed.exit_code;
  }
  const CommandLine& command = *parsed.command;
  if (command.list_checks) {
    if (dmlp::Status written = Emit(stdout, FormatCheckList()); !written.ok()) return Fail(written);
    return 0;
  }
  if (dmlp::Status placement = CheckReportPlacement(command); !placement.ok()) return Fail(placement);
  std::optional<std::string> html_path = command.html_path;
  if (html_path && command.html_optional) {
    if (dmlp::Status target = CheckHtmlTarget(command); !target.ok()) {
      WarnPageNotWritten(target);
      html_path.reset();
    }
  }
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
    if (dmlp::Status written = Emit(human, FormatHumanReport(*report)); !written.ok()) return Fail(written);
    document = ReportToJson(*report);
    exit_code = report->exit_code;
  } else {
    Fail(report.status());
    document = ErrorReportToJson(command.verify, report.status());
  }
  if (html_path) {
    const std::string page = report.ok() ? FormatHtmlReport(*report)
                                         : FormatHtmlErrorReport(command.verify, report.status());
    if (dmlp::Status written = WriteReportFile(*html_path, page); !written.ok()) {
      if (!command.html_optional) return Fail(written);
      WarnPageNotWritten(written);
    }
  }
  if (!command.json_path) return exit_code;
  const std::string text = DumpReport(document);
  dmlp::Status written = json_to_stdout ? Emit(stdout, text) : WriteReportFile(*command.json_path, text);
  return written.ok() ? exit_code : Fail(written);
}
