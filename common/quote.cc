#include "common/quote.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/py_json.h"

namespace dmlp {

std::string QuoteValue(std::string_view value) {
  const std::string json = PyJsonDumps(nlohmann::json(std::string(value)));  // "..."
  return "'" + json.substr(1, json.size() - 2) + "'";
}

bool HasControlCharacter(std::string_view value) {
  return std::any_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

}  // namespace dmlp
