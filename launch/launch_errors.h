// defines: kExitConfig, kExitInternal, kExitNotExecutable, kExitNotFound, ExitCodeForError
//
// The exit code each of the launcher's own errors (the ones a user sees after
// "dmlp-launch: error: ") maps to; the codes are common/format/error_codes.h's.
// Rank failures are not errors of the launcher: they exit with the rank's own code.
#pragma once

#include "common/format/error_codes.h"
#include "common/status.h"

namespace dmlp {

inline constexpr int kExitConfig = 2;
inline constexpr int kExitInternal = 125;
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

/// 2 for configuration (options, environment, log dir), 126/127 for the
/// command, 125 for anything else.
int ExitCodeForError(const Status& status);

}  // namespace dmlp
