// defines: QuoteValue, HasControlCharacter
//
// User-supplied values shown in error messages. A value may hold a newline,
// an escape sequence or a NUL (from a YAML "\0" or "\e"); printed raw it would
// forge lines or drive the terminal. So every message shows a value the way
// the JSON writer (common/py_json.h) spells a string, between single quotes:
// STEPS='1\n' and OUT_DIR='/x/a\u0000b'. Plain printable ASCII reads as before.
#pragma once

#include <string>
#include <string_view>

namespace dmlp {

/// 'value' with the body escaped as PyJsonDumps escapes a string (\n, \t, \", \\, \uXXXX).
std::string QuoteValue(std::string_view value);
/// True when `value` holds a byte below 0x20 or 0x7f (NUL, newline, tab, ESC, DEL).
bool HasControlCharacter(std::string_view value);

}  // namespace dmlp
