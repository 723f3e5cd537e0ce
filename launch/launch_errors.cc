#include "launch/launch_errors.h"

#include <string_view>

namespace dmlp {

int ExitCodeForError(const Status& status) {
  std::string_view code = status.code();
  if (code == kUsage || code == kOptionInvalid || code == kConfigInvalid || code == kLogDirFailed ||
      code == "ENV_MISSING" || code == "ENV_EMPTY" || code == "ENV_INVALID")
    return kExitConfig;
  if (code == kCommandNotFound) return kExitNotFound;
  if (code == kCommandNotExecutable) return kExitNotExecutable;
  return kExitInternal;
}

}  // namespace dmlp
