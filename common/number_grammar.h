// defines: IsDecimalInteger, IsDecimalNumber, ParseInteger, ParseFiniteDouble
//
// The one grammar of the numbers people type: every numeric setting (the
// environment, a --config file) and every numeric flag of dmlp-train,
// dmlp-launch and dmlp-verify is read through it.
//   integer:  [-] digit+              the '-' only where negatives are allowed
//   number:   [-] mantissa [exponent]
//   mantissa: digit+ | digit+ '.' digit* | '.' digit+
//   exponent: ('e' | 'E') ['+' | '-'] digit+
// Nothing else: no whitespace, no leading '+', no hex ("0x1p-3"), no "inf" or
// "nan", no trailing characters. strtod alone would take all of those, so a
// number is checked against the grammar first and only then converted by
// strtod, which rounds correctly: for every text the grammar accepts, the
// value is bit for bit the one strtod gave before there was a grammar.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace dmlp {

/// Whether `text` is digits, after one '-' when `allow_negative`.
bool IsDecimalInteger(std::string_view text, bool allow_negative);
/// Whether `text` is a number of the grammar above (a '-' allowed: the caller's range says).
bool IsDecimalNumber(std::string_view text);

/// Parses an integer of the grammar (a '-' only when min < 0) into [min, max];
/// the error detail is a sentence without a name ("is not an integer", "must be >= 1").
Result<int64_t> ParseInteger(std::string_view text, int64_t min, int64_t max);
/// Parses a number of the grammar that strtod takes without overflow or
/// underflow; details "is not a number" and "must be finite".
Result<double> ParseFiniteDouble(std::string_view text);

}  // namespace dmlp
