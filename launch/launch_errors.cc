#include "launch/launch_errors.h"

#include <string_view>

#include "common/format/error_codes.h"

namespace dmlp {

int ExitCodeForError(const Status& status) {
  std::string_view code = status.code();
  if (code == kUsage || code == kOptionInvalid || code == kConfigInvalid || code == kLogDirFailed ||
      code == kEnvMissing || code == kEnvEmpty || code == kEnvInvalid)
    return kExitConfig;
  if (code == kCommandNotFound) return kExitNotFound;
  if (code == kCommandNotExecutable) return kExitNotExecutable;
  return kExitInternal;
}

}  // namespace dmlp
