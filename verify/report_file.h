// defines: CheckReportTarget, WriteReportFile
//
// How dmlp-verify writes a report file the user named (--json=FILE,
// --html=FILE). What it may replace, a rule checked before verifying:
//   - never a file in a run directory (RUN_DIR or --against's) or below one:
//     FILE's directory and each one above it are compared with the runs by
//     device and inode, so no spelling (a link, "..") gets a report in;
//   - never what is not a regular file (a device node such as /dev/null, a
//     FIFO, a directory, a symbolic link): it is refused, not renamed over;
//   - a regular file only when it is a report dmlp-verify wrote before (its
//     format's marker, `is_own_report`); any other file is the user's.
// Writing is dmlp's one atomic writer (common/file_util.h, WriteFileAtomically):
// the text goes to FILE.tmp-<pid> in FILE's directory, created with
// O_EXCL|O_NOFOLLOW (a planted file or link there is refused, never followed
// or truncated), fsynced, then renamed over FILE, so a reader sees the old
// report or the new one, never half of one.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dmlp::verify {

/// Whether a file's whole text is a report dmlp-verify wrote (IsJsonReport, IsHtmlReport).
using ReportMarker = std::function<bool(std::string_view text)>;

/// USAGE_ERROR, worded with `option` ("--json="), when `path` breaks the rule
/// above; IO_ERROR when an existing FILE cannot be read. A directory that does
/// not exist passes: writing fails then, and says so.
Status CheckReportTarget(const std::string& option, const std::string& path,
                         const std::vector<std::string>& run_dirs, const ReportMarker& is_own_report);

/// Replaces `path` atomically with `contents`, unless something other than a
/// regular file took its name meanwhile. IO_ERROR naming the file; the temporary is removed.
Status WriteReportFile(const std::string& path, std::string_view contents);

}  // namespace dmlp::verify
