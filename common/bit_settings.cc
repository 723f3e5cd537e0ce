#include "common/bit_settings.h"

namespace dmlp {

std::vector<std::string> ResultFieldsOf(const std::function<bool(const SettingRow&)>& wanted) {
  std::vector<std::string> fields;
  for (const SettingRow& row : kSettings) {
    if (!wanted(row)) continue;
    std::string_view rest = row.result_fields;
    while (!rest.empty()) {
      const size_t space = rest.find(' ');
      const std::string_view field = rest.substr(0, space);
      if (!field.empty()) fields.emplace_back(field);
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
  }
  return fields;
}

std::vector<std::string> BitFreeResultFields(bool allreduce, bool cublas) {
  return ResultFieldsOf(
      [allreduce, cublas](const SettingRow& row) { return !DecidesBits(row.bits, allreduce, cublas); });
}

}  // namespace dmlp
