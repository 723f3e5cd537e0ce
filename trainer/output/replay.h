// defines: kSupersededDir, MoveReceiptsAside, ReadPriorReceipts
//
// RESUME=1 never destroys receipts. Rank 0 moves the interrupted attempt's
// receipt files (rank-*.jsonl, metrics.jsonl) into
// OUT_DIR/superseded/<attempt>/; every rank then rewrites the receipts up to the
// checkpoint step from them, and, as it recomputes the later steps, compares
// each new receipt with the old one (REPLAY_DIVERGED if they differ: a resumed
// deterministic job must reproduce them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/receipt.h"
#include "common/status.h"

namespace dmlp {

inline constexpr char kSupersededDir[] = "superseded";

/// Rank 0: moves rank-*.jsonl and metrics.jsonl into OUT_DIR/superseded/<n>/
/// (n = 1, 2, ... the first unused). Returns that folder, or "" when there was
/// nothing to move. IO_ERROR on failure (files already moved stay moved).
Result<std::string> MoveReceiptsAside(const std::string& out_dir);

/// The receipts an earlier attempt recorded for `rank`, indexed by step - 1,
/// read from <aside>/rank-<rank>.jsonl where that file has the step and from
/// <aside>/metrics.jsonl (rank 0's record) otherwise — a rank may have died
/// before writing its last receipts, or not have existed (fewer processes
/// then). Lines must be strict receipts in step order; a torn last line is
/// dropped. RESUME_RECEIPTS_INVALID otherwise.
Result<std::vector<Receipt>> ReadPriorReceipts(const std::string& aside_dir, int64_t rank);

}  // namespace dmlp
