// defines: StateCheck, CheckStateFile
//
// The final state file named by result.json's `state_file` (dmlp format):
// opened inside the run directory only (a plain name, a regular file, no
// symlink), digested with DigestStateFile, and compared with the last
// receipt's params_sha256 and result.json's final_params_sha256 and
// final_opt_state_sha256. Without a state_file (reference format) the final
// digests cannot be recomputed: state.absent (info).
#pragma once

#include <optional>
#include <string>

#include "common/receipt.h"
#include "common/status.h"
#include "verify/findings.h"
#include "verify/result_doc.h"
#include "verify/run_dir.h"

namespace dmlp::verify {

/// What became of the state file: "absent", "verified", "mismatch" or "invalid".
using StateCheck = std::string;

/// Adds state.* findings; IO_ERROR when the file cannot be read at all.
Result<StateCheck> CheckStateFile(const RunDir& dir, const ResultDoc& doc,
                                  const std::optional<Receipt>& last_record, FindingSink& sink);

}  // namespace dmlp::verify
