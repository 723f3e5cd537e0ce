#include "common/float_repr.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace dmlp {

std::string PythonFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, as Python's float_repr_style 'short' (David Gay's
  // mode 0) computes them; to_chars gives "d.ddde±x".
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, std::fabs(value),
                                    std::chars_format::scientific);
  std::string text(buffer, end);
  size_t e = text.find('e');
  std::string digits = text.substr(0, 1) + (e > 1 ? text.substr(2, e - 2) : "");
  int exponent = std::atoi(text.c_str() + e + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (digits == "0") exponent = 0;
  int point = exponent + 1;  // digits d1d2... mean 0.d1d2... * 10^point
  std::string out = std::signbit(value) ? "-" : "";
  const int size = static_cast<int>(digits.size());
  if (point <= -4 || point > 16) {
    out += digits.substr(0, 1);
    if (size > 1) out += "." + digits.substr(1);
    int shown = point - 1;
    out += shown < 0 ? "e-" : "e+";
    std::string magnitude = std::to_string(std::abs(shown));
    out += (magnitude.size() < 2 ? "0" : "") + magnitude;
  } else if (point <= 0) {
    out += "0." + std::string(-point, '0') + digits;
  } else if (point >= size) {
    out += digits + std::string(point - size, '0') + ".0";
  } else {
    out += digits.substr(0, point) + "." + digits.substr(point);
  }
  return out;
}

}  // namespace dmlp
