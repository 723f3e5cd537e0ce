#include "common/receipt.h"

namespace dmlp {

std::string FormatReceiptLine(const Receipt& receipt) {
  // Keys in sorted order, json.dumps's default separators (", " and ": ").
  std::string line;
  line.reserve(160);
  line += "{\"loss\": \"" + receipt.loss + "\", \"params_sha256\": \"" + receipt.params_sha256 + "\"";
  if (receipt.rank) line += ", \"rank\": " + std::to_string(*receipt.rank);
  line += ", \"step\": " + std::to_string(receipt.step) + "}\n";
  return line;
}

}  // namespace dmlp
