// defines: ResultCheckInput, CheckResultDoc
//
// result.json against itself and against the receipts: complete is true,
// steps equals plan.steps and every receipt file's last step, final_loss and
// params_sha256 equal the last receipt (compared as strings), processes equals
// len(rank_files) and model.processes, rank_files is exactly rank-0.jsonl ..
// rank-(P-1).jsonl (its entries are compared as text, never opened), and no
// receipt file ends in a torn line. Pure: no I/O, so the fuzzer can drive it.
#pragma once

#include <string>

#include "verify/findings.h"
#include "verify/receipt_set.h"
#include "verify/result_doc.h"

namespace dmlp::verify {

/// Adds result.* findings; `result_display` names result.json in them.
void CheckResultDoc(const ResultDoc& doc, const ReceiptSetSummary& receipts,
                    const std::string& result_display, FindingSink& sink);

}  // namespace dmlp::verify
