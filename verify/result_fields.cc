#include "verify/result_fields.h"

namespace dmlp::verify {

const nlohmann::json* ResultField(const ResultDoc& doc, std::string_view field) {
  if (field.size() > 2 && field.substr(field.size() - 2) == ".*") field.remove_suffix(2);
  const size_t dot = field.find('.');
  const std::string_view section = field.substr(0, dot);
  const nlohmann::json* value = section == "plan"    ? &doc.plan
                                : section == "model" ? &doc.model
                                : section == "build" ? &doc.build
                                : section == "fingerprint" ? &doc.fingerprint
                                                           : nullptr;
  for (size_t begin = dot; value != nullptr && begin != std::string_view::npos;) {
    const size_t end = field.find('.', begin + 1);
    const std::string key(field.substr(begin + 1, end == std::string_view::npos ? end : end - begin - 1));
    if (!value->is_object()) return nullptr;
    auto found = value->find(key);
    value = found == value->end() ? nullptr : &*found;
    begin = end;
  }
  return value;
}

std::vector<std::string> ResultFieldDifferences(const ResultDoc& a, const ResultDoc& b,
                                                const std::vector<std::string>& fields, bool absent_differs) {
  std::vector<std::string> differences;
  for (const std::string& field : fields) {
    const nlohmann::json* a_value = ResultField(a, field);
    const nlohmann::json* b_value = ResultField(b, field);
    if (a_value && b_value) {
      if (*a_value != *b_value) differences.push_back(field + ": " + a_value->dump() + " vs " + b_value->dump());
    } else if ((a_value || b_value) && absent_differs) {
      differences.push_back(field + ": " + (a_value ? a_value->dump() : "(absent)") + " vs " +
                            (b_value ? b_value->dump() : "(absent)"));
    }
  }
  return differences;
}

}  // namespace dmlp::verify
