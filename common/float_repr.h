// defines: PythonFloatRepr, Float32Repr
//
// The text Python's repr(float(x)) gives: the shortest digits that round-trip
// the double, fixed notation for 1e-4 <= |x| < 1e16 (always with a '.'),
// scientific otherwise ("1e+16", "9.999999747378752e-05"). Receipts store the
// float32 loss as repr(float(loss)), i.e. the float32 widened to double.
#pragma once

#include <string>

namespace dmlp {

/// Python's repr(float) of `value` (also "inf", "-inf", "nan").
std::string PythonFloatRepr(double value);
/// repr(float(value)) for a float32: the exact text of a receipt's "loss".
inline std::string Float32Repr(float value) { return PythonFloatRepr(static_cast<double>(value)); }

}  // namespace dmlp
