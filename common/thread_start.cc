#include "common/thread_start.h"

namespace dmlp {

Status ThreadStartFailed(const std::string& what, const std::system_error& error) {
  // The error's own text ("Resource temporarily unavailable"), without
  // libstdc++'s "Resource temporarily unavailable: Resource ..." doubling.
  return Status::Error(kThreadStartFailedCode,
                       "cannot start a thread (" + what + "): " + error.code().message());
}

}  // namespace dmlp
