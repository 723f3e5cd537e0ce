// defines: ReceiptDefect, ReceiptLineParse, ParseReceiptLine, ReadReceiptLine,
//          ReceiptDefectId, kMaxReceiptLineBytes
//
// The strict reader of one receipt line (rank-<r>.jsonl with `rank`,
// metrics.jsonl without). A line is accepted only when it is byte-identical to
// what FormatReceiptLine (receipt.h) writes for the values it holds; anything
// else gets exactly one defect, the first in this order:
//
//   too_long, nul, bom, empty, not_json | truncated | glued, duplicate_key,
//   field_missing, field_extra, field_type, field_range, hash_format,
//   loss_nonfinite, loss_not_repr, loss_not_float32, not_canonical
//
// Each defect has a stable finding id ("line.nul", ...) that dmlp-verify reports
// and the trainer's replay check can print. Framing (where a line ends, whether
// it is the file's last) is the caller's business; `truncated` means "the JSON
// stopped before it was complete", which the caller calls line.torn_last when
// the line is the last one in its file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/receipt.h"
#include "common/status.h"

namespace dmlp {

/// Lines longer than this are rejected without parsing (a receipt is ~140 bytes).
inline constexpr size_t kMaxReceiptLineBytes = 4096;
/// step and rank above 2^53 are out of range: no run gets there, and step + 1
/// can then never overflow in the code that checks step order.
inline constexpr int64_t kMaxReceiptInteger = int64_t{1} << 53;

enum class ReceiptDefect {
  kNone,
  kTooLong,         // longer than kMaxReceiptLineBytes (not parsed)
  kNul,             // a NUL byte anywhere in the line
  kBom,             // starts with a UTF-8 byte order mark
  kEmpty,           // nothing between two newlines
  kNotJson,         // not one JSON object
  kTruncated,       // a JSON object cut short (the input ended inside it)
  kGlued,           // not JSON, and a second record starts inside the line
  kDuplicateKey,    // a top-level key appears twice
  kFieldMissing,    // loss, params_sha256, step (and rank in rank files) are all required
  kFieldExtra,      // any other key (rank is extra in metrics.jsonl)
  kFieldType,       // loss/hash not strings, step/rank not JSON integers
  kFieldRange,      // step < 1, rank < 0, or either above kMaxReceiptInteger
  kHashFormat,      // params_sha256 is not 64 lower-case hex
  kLossNonfinite,   // loss reads as nan/inf
  kLossNotRepr,     // loss is not Python's repr() of its own value
  kLossNotFloat32,  // loss is not a float32 value widened to double
  kNotCanonical,    // valid values, but not the bytes json.dumps(sort_keys=True) writes
};

struct ReceiptLineParse {
  ReceiptDefect defect = ReceiptDefect::kNone;
  std::string detail;  // human explanation of the defect; empty when none
  Receipt receipt;     // the values read; meaningful when `usable`
  // All fields present with the right types and ranges: step tracking and
  // cross-rank comparison can use the record even if the defect is one of
  // hash_format, loss_*, not_canonical.
  bool usable = false;
  size_t glued_offset = 0;  // kGlued: where the glued record starts in the line

  bool ok() const { return defect == ReceiptDefect::kNone; }
};

/// Parses one line (without its '\n'); `expect_rank`: rank files true, metrics.jsonl false.
ReceiptLineParse ParseReceiptLine(std::string_view line, bool expect_rank);
/// The same into `parse`, reusing its strings' storage: the streaming hot path allocates nothing.
void ParseReceiptLine(std::string_view line, bool expect_rank, ReceiptLineParse& parse);
/// The stable finding id of a defect, e.g. "line.duplicate_key" ("" for kNone).
const char* ReceiptDefectId(ReceiptDefect defect);
/// ParseReceiptLine as a Result: code RECEIPT_INVALID, detail "<finding id>: <detail>".
Result<Receipt> ReadReceiptLine(std::string_view line, bool expect_rank);

}  // namespace dmlp
