#include "common/errno_error.h"

#include <cstring>
#include <string>

namespace dmlp {

Status ErrnoError(std::string_view code, std::string_view what, int error) {
  return Status::Error(std::string(code), std::string(what) + ": " + std::strerror(error));
}

}  // namespace dmlp
