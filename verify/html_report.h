// defines: FormatHtmlReport, FormatHtmlErrorReport, IsHtmlReport
//
// --html=FILE: one self-contained page for people, built from the same Report
// as the text and JSON reports (the findings, the first divergence, the run
// summaries) plus the RunTrace the same pass kept (VerifyOptions::trace):
//   verdict and exit code; per run its directory, format and version, ranks,
//   steps, result.json and state file status, plan and fingerprint; the first
//   divergence (and, with --against, where the runs part and whether in the
//   loss, the digest or both); the loss curve(s); the rank x step strip;
//   every kept finding as a table row (check id, file:line, step, message).
// No script, no external resource (inline CSS and SVG; a Content-Security-
// Policy forbids both anyway), so it reads the same from file:// anywhere.
// Every string from a run directory goes through HtmlEscape (html_text.h).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "verify/verifier.h"

namespace dmlp::verify {

/// The page of a finished verification, whatever its verdict.
std::string FormatHtmlReport(const Report& report);
/// The page when verification could not run (verdict ERROR, exit 2).
std::string FormatHtmlErrorReport(const VerifyOptions& options, const Status& error);
/// Whether `page` begins as every page above does: one dmlp-verify wrote (report_file.h).
bool IsHtmlReport(std::string_view page);

}  // namespace dmlp::verify
