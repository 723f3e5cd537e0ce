// defines: ResolveExecutable, DefaultCommand
//
// Finds the file a COMMAND runs before any rank starts, the way execvp would
// (a name with '/' is a path, otherwise each PATH entry in turn), so "not
// found" (127) and "not executable" (126) are reported once, exactly, instead
// of N times from N half-started ranks.
#pragma once

#include <string>

#include "common/env.h"
#include "common/status.h"

namespace dmlp {

/// The path to exec for `command`. COMMAND_NOT_FOUND when nothing by that name
/// exists; COMMAND_NOT_EXECUTABLE when it exists but cannot be run (no x bit, a
/// directory). PATH comes from `env` (unset: "/usr/local/bin:/usr/bin:/bin").
Result<std::string> ResolveExecutable(const std::string& command, const Environment& env);

/// "<directory of /proc/self/exe>/dmlp-train": the trainer installed beside dmlp-launch.
std::string DefaultCommand();

}  // namespace dmlp
