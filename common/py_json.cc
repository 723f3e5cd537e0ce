#include "common/py_json.h"

#include <cmath>
#include <cstdio>

#include "common/float_repr.h"

namespace dmlp {
namespace {

void AppendEscapedUnit(std::string& out, unsigned unit) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\u%04x", unit);
  out += buffer;
}

// Decodes one UTF-8 sequence at text[i]; returns its length, or 0 if invalid.
size_t DecodeUtf8(const std::string& text, size_t i, unsigned& code_point) {
  unsigned char lead = static_cast<unsigned char>(text[i]);
  size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (length == 0 || lead >= 0xF8 || i + length > text.size()) return 0;
  code_point = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    unsigned char next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (next & 0x3F);
  }
  static constexpr unsigned kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code_point < kMinimum[length] || code_point > 0x10FFFF ||
      (code_point >= 0xD800 && code_point <= 0xDFFF))
    return 0;
  return length;
}

void AppendString(std::string& out, const std::string& text) {
  out += '"';
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\b') {
      out += "\\b";
    } else if (c == '\f') {
      out += "\\f";
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else if (c < 0x80) {
      AppendEscapedUnit(out, c);
    } else {
      unsigned code_point = 0;
      size_t length = DecodeUtf8(text, i, code_point);
      if (length == 0) {  // surrogateescape: byte 0xXY becomes U+DCXY
        AppendEscapedUnit(out, 0xDC00 + c);
        ++i;
        continue;
      }
      if (code_point >= 0x10000) {
        code_point -= 0x10000;
        AppendEscapedUnit(out, 0xD800 + (code_point >> 10));
        AppendEscapedUnit(out, 0xDC00 + (code_point & 0x3FF));
      } else {
        AppendEscapedUnit(out, code_point);
      }
      i += length;
      continue;
    }
    ++i;
  }
  out += '"';
}

void AppendFloat(std::string& out, double value) {
  if (std::isnan(value)) out += "NaN";
  else if (std::isinf(value)) out += value > 0 ? "Infinity" : "-Infinity";
  else out += PythonFloatRepr(value);
}

void AppendNewline(std::string& out, int indent, int level) {
  out += '\n';
  out.append(static_cast<size_t>(indent) * level, ' ');
}

void Append(std::string& out, const nlohmann::json& value, int indent, int level) {
  using Type = nlohmann::json::value_t;
  switch (value.type()) {
    case Type::null: out += "null"; return;
    case Type::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case Type::number_integer: out += std::to_string(value.get<int64_t>()); return;
    case Type::number_unsigned: out += std::to_string(value.get<uint64_t>()); return;
    case Type::number_float: AppendFloat(out, value.get<double>()); return;
    case Type::string: AppendString(out, value.get_ref<const std::string&>()); return;
    case Type::array:
    case Type::object: {
      const bool is_object = value.is_object();
      if (value.empty()) {
        out += is_object ? "{}" : "[]";
        return;
      }
      out += is_object ? '{' : '[';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first) out += indent >= 0 ? "," : ", ";
        first = false;
        if (indent >= 0) AppendNewline(out, indent, level + 1);
        if (is_object) {
          AppendString(out, it.key());
          out += ": ";
        }
        Append(out, *it, indent, level + 1);
      }
      if (indent >= 0) AppendNewline(out, indent, level);
      out += is_object ? '}' : ']';
      return;
    }
    default: out += "null"; return;  // binary/discarded never occur in dmlp documents
  }
}

}  // namespace

std::string PyJsonDumps(const nlohmann::json& doc, int indent) {
  std::string out;
  Append(out, doc, indent, 0);
  return out;
}

}  // namespace dmlp
