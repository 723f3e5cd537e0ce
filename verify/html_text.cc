#include "verify/html_text.h"

#include <cstdint>

namespace dmlp::verify {
namespace {

// The length of the valid UTF-8 sequence at text[at], or 0 with `*valid_prefix`
// set to the bytes of its maximal invalid subpart (at least 1).
size_t SequenceLength(std::string_view text, size_t at, size_t* valid_prefix) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(at);
  *valid_prefix = 1;
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;    // overlong
    if (lead == 0xED) high = 0x9F;   // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;    // overlong
    if (lead == 0xF4) high = 0x8F;   // beyond U+10FFFF
  } else {
    return 0;
  }
  for (size_t i = 1; i < length; ++i) {
    if (at + i >= text.size()) return 0;
    const uint8_t next = byte(at + i);
    if (next < (i == 1 ? low : 0x80) || next > (i == 1 ? high : 0xBF)) return 0;
    *valid_prefix = i + 1;
  }
  return length;
}

}  // namespace

std::string HtmlEscape(std::string_view text, size_t limit) {
  std::string out;
  out.reserve(text.size() < limit ? text.size() : limit);
  size_t at = 0;
  while (at < text.size()) {
    if (at >= limit) {
      out += "\xE2\x80\xA6";  // …
      break;
    }
    size_t valid_prefix = 0;
    const size_t length = SequenceLength(text, at, &valid_prefix);
    if (length == 0) {
      out += kReplacementCharacter;
      at += valid_prefix;
      continue;
    }
    if (length == 2 && static_cast<uint8_t>(text[at]) == 0xC2 && static_cast<uint8_t>(text[at + 1]) < 0xA0) {
      out += kReplacementCharacter;  // a C1 control character
      at += length;
      continue;
    }
    if (length > 1) {
      out.append(text.substr(at, length));
      at += length;
      continue;
    }
    const char c = text[at++];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t': case '\n': out += c; break;
      default:
        if (static_cast<uint8_t>(c) < 0x20 || c == 0x7F) out += kReplacementCharacter;
        else out += c;
    }
  }
  return out;
}

}  // namespace dmlp::verify
