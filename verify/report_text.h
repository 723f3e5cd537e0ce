// defines: FormatFindingLine, FormatHumanReport, FormatCheckList
//
// The human report: one line per kept finding,
//   <severity> <id> <file>[:<line>][ step <s>]: <message>[ (expected <e>, got <a>)]
// then a summary line per run, a count line, and a last line that is exactly
// PASS, INCOMPLETE or FAIL.
#pragma once

#include <string>

#include "verify/findings.h"
#include "verify/verifier.h"

namespace dmlp::verify {

/// One finding as a line (without '\n'); untrusted bytes are shown escaped.
std::string FormatFindingLine(const Finding& finding);
/// The whole human report, ending in "PASS\n", "INCOMPLETE\n" or "FAIL\n".
std::string FormatHumanReport(const Report& report);
/// The catalog as a Markdown table (--list-checks, verify/README.md).
std::string FormatCheckList();

}  // namespace dmlp::verify
