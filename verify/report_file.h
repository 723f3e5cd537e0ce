// defines: WriteReportFile
//
// How dmlp-verify writes a report file the user named (--html=FILE): the text
// goes to FILE.tmp-<pid> in FILE's directory, created with O_EXCL|O_NOFOLLOW
// (a planted file or link there is refused, never followed or truncated),
// fsynced, then renamed over FILE, so a reader sees the old report or the new
// one, never half of one, and FILE is replaced even when it is a symlink
// (rename replaces the link, not its target).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace dmlp::verify {

/// Replaces `path` atomically with `contents`. IO_ERROR naming the file; the temporary is removed.
Status WriteReportFile(const std::string& path, std::string_view contents);

}  // namespace dmlp::verify
