// defines: kSupersededDir, ReadPriorReceipts, RanksWithReceiptFiles, MoveReceiptsAside,
//          ResumeStageReached
//
// RESUME=1 never destroys receipts, and a refused or interrupted resume never
// makes the run unresumable. The sequence (trainer/start.cc drives it):
//
//   1. validate, read-only (rank 0, holding OUT_DIR's lock): the newest valid
//      checkpoint (fully hashed and loaded), its step <= STEPS, and for every
//      rank of the new job the earlier receipts (ReadPriorReceipts over OUT_DIR
//      and superseded/*) reach the checkpoint's step with its digest. Any
//      refusal here returns before anything in OUT_DIR changed.
//   2. move aside (rank 0): the top-level receipt files are renamed, never
//      copied or rewritten, into a new OUT_DIR/superseded/<n>/, then both
//      directories are fsynced.
//   3. decide: rank 0 tells every rank the checkpoint; each reads its prior
//      receipts from superseded/* and creates its receipt files.
//   4. replay: each rank rewrites steps 1..checkpoint from the prior receipts,
//      then recomputes the later steps, each compared with the prior one where
//      there is one (REPLAY_DIVERGED otherwise: nothing diverging is written).
//
// Why a kill at any instant is recoverable: every receipt line ever written
// stays in OUT_DIR (top level or superseded/<n>, only ever renamed), and every
// line a resumed attempt writes equals the prior receipt of its step. So the
// receipts of all attempts are prefixes of one history, and the next resume
// takes, per rank, the longest of them (checking that they agree): a kill in
// step 2 leaves files split between the top level and superseded/<n> (both are
// read), a kill in step 3 or 4 leaves a shorter copy at the top level (the
// longer original is in superseded/). The roll-forward is the same sequence
// run again; nothing needs undoing.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/out_dir.h"
#include "common/receipt.h"
#include "common/status.h"

namespace dmlp {

inline constexpr char kSupersededDir[] = "superseded";

/// The receipts earlier attempts recorded for `rank`, indexed by step - 1: the
/// longest of rank-<rank>.jsonl and metrics.jsonl (rank 0's record, a rank may
/// have died before writing its last receipts or not have existed) in every
/// superseded/<n>/ and, with `include_top_level`, in OUT_DIR itself. Lines must
/// be strict receipts in step order (a torn last line is dropped) and all files
/// must agree where they overlap: RESUME_RECEIPTS_INVALID otherwise. A link
/// where a receipt file or superseded/ belongs is OUTPUT_NOT_REGULAR.
Result<std::vector<Receipt>> ReadPriorReceipts(const OutDir& out, int64_t rank,
                                               bool include_top_level);

/// The ranks that have a rank-<r>.jsonl in OUT_DIR or any superseded/<n>/
/// (a rank without one inherits metrics.jsonl, which rank 0's prior includes).
Result<std::set<int64_t>> RanksWithReceiptFiles(const OutDir& out);

/// Rank 0: renames rank-*.jsonl (the receipts and the env files rank-<r>.env.jsonl,
/// so each attempt's record of where it ran stays beside its receipts) and
/// metrics.jsonl into OUT_DIR/superseded/<n>/
/// (n = 1, 2, ... the first unused) and fsyncs. Returns that folder, or "" when
/// there was nothing to move. IO_ERROR on failure (files already moved stay
/// moved, which the next resume reads the same).
Result<std::string> MoveReceiptsAside(const OutDir& out);

/// Test hook (tests/e2e/trainer/test_out_dir_safety.py): SIGKILLs this process
/// when DMLP_TEST_KILL_AT_RESUME_STAGE equals `stage`, to cut a resume at a
/// named point of the sequence above without racing a timer.
void ResumeStageReached(std::string_view stage);

}  // namespace dmlp
