// defines: CommandLine, ParseOutcome, ParseCommandLine, CheckReportPlacement, CheckHtmlTarget
//
// dmlp-verify's command line (CLI11; only APIs present in both CLI11 2.1 and 2.4):
//
//   dmlp-verify [--allow-incomplete] [--against GOLDEN [--tolerance REL] [--require-comparable]
//               [--allow-different-experiment]] [--json[=FILE]] [--html=FILE [--html-optional]] RUN_DIR
//   dmlp-verify --list-checks | --help | --version
//
// `--json` alone writes the JSON report to stdout and the human report to
// stderr; `--json=FILE` writes it to FILE and the human report to stdout.
// FILE must be attached with '=': `--json FILE` would read FILE as RUN_DIR.
// `--html=FILE` writes the page for people to FILE. Either FILE is replaced
// atomically, never inside a run directory, and only where it is absent or an
// earlier report (report_file.h). With `--html-optional` the page is an
// extra (run.sh asks for it so): a FILE refused or not written costs a warning
// on stderr and the page, never the verdict or its exit code.
// `--tolerance REL` (loss_tolerance.h) needs --against; a REL that is not a
// finite decimal number >= 0 is a usage error (exit 2), as are an empty GOLDEN
// or --html FILE (an unset shell variable: never taken as absent) and, from
// CheckReportPlacement, --json=FILE and --html=FILE naming one file.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "verify/verifier.h"

namespace dmlp::verify {

struct CommandLine {
  VerifyOptions verify;
  std::optional<std::string> json_path;  // "-": stdout
  std::optional<std::string> html_path;  // --html=FILE (html_report.h)
  bool html_optional = false;            // --html-optional: the page is an extra
  bool list_checks = false;
};

/// Either a command to run, or an exit code with text (help, version, usage error).
struct ParseOutcome {
  std::optional<CommandLine> command;
  int exit_code = 0;  // when no command: 0 for --help/--version, 2 for usage errors
  std::string out, err;
};

/// Parses argv; never prints.
ParseOutcome ParseCommandLine(int argc, const char* const* argv);
/// USAGE_ERROR when --json=FILE or --html=FILE may not be written (report_file.h CheckReportTarget),
/// or when both name one file (same_file.h). --html=FILE is left to CheckHtmlTarget under --html-optional.
Status CheckReportPlacement(const CommandLine& command);
/// USAGE_ERROR when --html=FILE may not be written (report_file.h CheckReportTarget). REQUIRES: html_path.
Status CheckHtmlTarget(const CommandLine& command);

}  // namespace dmlp::verify
