// defines: Receipt, FormatReceiptLine, kReceipt* field names
//
// One line of OUT_DIR/rank-<r>.jsonl (with rank) or metrics.jsonl (without),
// byte-identical to Python's json.dumps(record, sort_keys=True) + "\n":
//
//   {"loss": "2.3025851249694824", "params_sha256": "<64 hex>", "rank": 0, "step": 1}
//
// `loss` is repr(float(float32 loss)) (float_repr.h), stored as a JSON string.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dmlp {

inline constexpr char kReceiptLoss[] = "loss";
inline constexpr char kReceiptParamsSha256[] = "params_sha256";
inline constexpr char kReceiptRank[] = "rank";
inline constexpr char kReceiptStep[] = "step";

struct Receipt {
  int64_t step = 0;
  std::string loss;           // Python repr text
  std::string params_sha256;  // 64 lower-case hex
  std::optional<int64_t> rank;  // absent in metrics.jsonl

  friend bool operator==(const Receipt&, const Receipt&) = default;
};

/// The exact line (with its trailing '\n'). REQUIRES: loss and hash need no JSON escaping.
std::string FormatReceiptLine(const Receipt& receipt);

}  // namespace dmlp
