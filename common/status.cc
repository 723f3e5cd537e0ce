#include "common/status.h"

#include "common/format/error_codes.h"

namespace dmlp {

Status Status::Error(std::string code, std::string detail) {
  Status status;
  status.code_ = code.empty() ? std::string(kInternal) : std::move(code);
  status.detail_ = std::move(detail);
  return status;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  if (detail_.empty()) return code_;
  return code_ + ": " + detail_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Error(code_, detail_.empty() ? context : context + ": " + detail_);
}

}  // namespace dmlp
