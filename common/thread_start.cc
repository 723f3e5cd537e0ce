#include "common/thread_start.h"

#include "common/format/error_codes.h"

namespace dmlp {

Status ThreadStartFailed(const std::string& what, const std::system_error& error) {
  // The error's own text ("Resource temporarily unavailable"), without
  // libstdc++'s "Resource temporarily unavailable: Resource ..." doubling.
  return Status::Error(kResourceExhausted,
                       "cannot start a thread (" + what + "): " + error.code().message());
}

}  // namespace dmlp
