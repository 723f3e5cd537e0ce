// defines: ResolveExecutable, DefaultCommand, kDefaultCommandName
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

/// The program dmlp-launch runs when no COMMAND is given, beside itself.
inline constexpr char kDefaultCommandName[] = "dmlp-train";

/// The path to exec for `command`. COMMAND_NOT_FOUND when nothing by that name
/// exists; COMMAND_NOT_EXECUTABLE when it exists but cannot be run (no x bit, a
/// directory). PATH comes from `env` (unset: "/usr/local/bin:/usr/bin:/bin").
Result<std::string> ResolveExecutable(const std::string& command, const Environment& env);

/// "<directory of dmlp-launch>/dmlp-train": the trainer installed beside it.
/// The directory comes from `self_link` (/proc/self/exe); where that cannot be
/// read (no /proc in a container or chroot), from `argv0`, the way the shell
/// found us: a path, or a name looked up in PATH. COMMAND_NOT_FOUND, naming
/// COMMAND as the way to give the trainer, when neither tells.
Result<std::string> DefaultCommand(const std::string& argv0, const Environment& env,
                                   const std::string& self_link = "/proc/self/exe");

}  // namespace dmlp
