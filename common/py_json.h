// defines: PyJsonDumps
//
// Serializes a JSON document exactly as Python's
//   json.dumps(doc, sort_keys=True)            (indent < 0)
//   json.dumps(doc, sort_keys=True, indent=N)  (indent >= 0)
// would: ", "/": " separators (","/": " with indent), ASCII-only output with
// \uXXXX escapes (surrogate pairs; invalid UTF-8 bytes as \udcXX, the way
// Python's surrogateescape decodes file names), floats as repr(float), and
// Infinity/NaN for non-finite floats. Keys are sorted by nlohmann::json's
// std::map, i.e. by bytes, which is code-point order for UTF-8.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dmlp {

/// Python-compatible json.dumps(doc, sort_keys=True[, indent=indent]).
std::string PyJsonDumps(const nlohmann::json& doc, int indent = -1);

}  // namespace dmlp
