// defines: kUsage, kOptionInvalid, kConfigInvalid, kCommandNotFound, kCommandNotExecutable,
//          kLogDirFailed, kSpawnFailed, kInternal, kOutputWriteFailed, kOutOfMemory,
//          kParentGone,
//          kExitConfig, kExitInternal,
//          kExitNotExecutable, kExitNotFound, ExitCodeForError
//
// The launcher's own error codes (the ones a user sees after
// "dmlp-launch: error: ") and the exit code each maps to. Rank failures are
// not errors of the launcher: they exit with the rank's own code.
#pragma once

#include "common/status.h"

namespace dmlp {

inline constexpr char kUsage[] = "USAGE";                   // unknown option, missing value
inline constexpr char kOptionInvalid[] = "OPTION_INVALID";  // --grace=x, --nnodes=0 ...
inline constexpr char kConfigInvalid[] = "CONFIG_INVALID";  // options that contradict each other
inline constexpr char kLogDirFailed[] = "LOG_DIR_FAILED";   // --log-dir cannot be created/written
inline constexpr char kCommandNotFound[] = "COMMAND_NOT_FOUND";
inline constexpr char kCommandNotExecutable[] = "COMMAND_NOT_EXECUTABLE";
inline constexpr char kSpawnFailed[] = "SPAWN_FAILED";  // fork, pipe, epoll ... failed
inline constexpr char kInternal[] = "INTERNAL";
// The launcher's own stdout/stderr failed (EFBIG past RLIMIT_FSIZE, ENOSPC, EIO);
// ranks ran on, lines after the failure were lost (--log-dir keeps them).
inline constexpr char kOutputWriteFailed[] = "OUTPUT_WRITE_FAILED";
inline constexpr char kOutOfMemory[] = "OUT_OF_MEMORY";  // an allocation failed (std::bad_alloc)
// --stop-with-parent PID names a process that is not (or no longer) our parent.
inline constexpr char kParentGone[] = "PARENT_GONE";

inline constexpr int kExitConfig = 2;
inline constexpr int kExitInternal = 125;
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

/// 2 for configuration (options, environment, log dir), 126/127 for the
/// command, 125 for anything else.
int ExitCodeForError(const Status& status);

}  // namespace dmlp
