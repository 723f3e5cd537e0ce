#include "common/number_grammar.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace dmlp {
namespace {

// The length of the run of digits at `text[at]` on, `at` moved past it.
size_t SkipDigits(std::string_view text, size_t& at) {
  const size_t start = at;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
  return at - start;
}

}  // namespace

bool IsDecimalInteger(std::string_view text, bool allow_negative) {
  size_t at = allow_negative && !text.empty() && text[0] == '-' ? 1 : 0;
  return SkipDigits(text, at) > 0 && at == text.size();
}

bool IsDecimalNumber(std::string_view text) {
  size_t at = !text.empty() && text[0] == '-' ? 1 : 0;
  size_t digits = SkipDigits(text, at);
  if (at < text.size() && text[at] == '.') {
    ++at;
    digits += SkipDigits(text, at);
  }
  if (digits == 0) return false;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
    if (SkipDigits(text, at) == 0) return false;
  }
  return at == text.size();
}

Result<int64_t> ParseInteger(std::string_view text, int64_t min, int64_t max) {
  if (!IsDecimalInteger(text, min < 0)) return Status::Error("ENV_INVALID", "is not an integer");
  const bool negative = text[0] == '-';
  // Accumulate as a negative number so INT64_MIN is reachable without overflow.
  int64_t value = 0;
  for (char c : negative ? text.substr(1) : text) {
    const int digit = c - '0';
    if (value < (INT64_MIN + digit) / 10) return Status::Error("ENV_INVALID", "is out of range");
    value = value * 10 - digit;
  }
  if (!negative) {
    if (value == INT64_MIN) return Status::Error("ENV_INVALID", "is out of range");
    value = -value;
  }
  if (value < min) return Status::Error("ENV_INVALID", "must be >= " + std::to_string(min));
  if (value > max) return Status::Error("ENV_INVALID", "must be <= " + std::to_string(max));
  return value;
}

Result<double> ParseFiniteDouble(std::string_view text) {
  if (!IsDecimalNumber(text)) return Status::Error("ENV_INVALID", "is not a number");
  const std::string copy(text);  // strtod needs the terminating NUL
  errno = 0;
  const double value = std::strtod(copy.c_str(), nullptr);
  if (!std::isfinite(value) || errno == ERANGE) return Status::Error("ENV_INVALID", "must be finite");
  return value;
}

}  // namespace dmlp
