#include "verify/findings.h"

namespace dmlp::verify {

Finding Finding::Of(std::string_view id, std::string file, std::string message) {
  Finding finding;
  finding.id = id;
  const CheckInfo* check = FindCheck(id);
  finding.severity = check != nullptr ? check->severity : Severity::kError;
  finding.file = std::move(file);
  finding.message = std::move(message);
  return finding;
}

void FindingSink::Add(Finding finding) {
  switch (finding.severity) {
    case Severity::kError: ++errors_; break;
    case Severity::kIncomplete: ++incompletes_; break;
    case Severity::kWarning: ++warnings_; break;
    case Severity::kInfo: ++infos_; break;
  }
  ++per_id_[finding.id];
  size_t& same = per_id_file_[{finding.id, finding.file}];
  if (++same > kKeepPerIdAndFile || kept_.size() >= kKeepTotal) return;
  kept_.push_back(std::move(finding));
}

size_t FindingSink::Count(std::string_view id) const {
  auto it = per_id_.find(id);
  return it == per_id_.end() ? 0 : it->second;
}

}  // namespace dmlp::verify
