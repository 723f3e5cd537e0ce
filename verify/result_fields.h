// defines: ResultField, ResultFieldDifferences
//
// The fields of result.json that common/bit_settings.h names ("plan.seed",
// "fingerprint.blas.kernel", "fingerprint.nccl_env.*" for a whole subtree),
// looked up in a parsed document and compared between two documents as JSON
// values (0.001 written by Python and by dmlp, 42 and 42.0, are one value).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "verify/result_doc.h"

namespace dmlp::verify {

/// The value at `field` (dotted; a trailing ".*" names the subtree), or nullptr where the document has none.
const nlohmann::json* ResultField(const ResultDoc& doc, std::string_view field);

/// "field: A vs B" for each of `fields` whose values differ; a field only one
/// document records is a difference when `absent_differs`, else skipped.
std::vector<std::string> ResultFieldDifferences(const ResultDoc& a, const ResultDoc& b,
                                                const std::vector<std::string>& fields, bool absent_differs);

}  // namespace dmlp::verify
