// libFuzzer target: result.json's strict parser, its checks against receipts,
// and the JSON report built from what they find. Invariants: the parser gives
// either a document or a problem, never both or neither; the report of any
// findings serializes to JSON that parses again (hostile strings included).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "verify/report_json.h"
#include "verify/result_check.h"
#include "verify/result_doc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dmlp::verify;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ResultParse parse = ParseResultJson(text);
  if (parse.doc.has_value() == !parse.problem.empty()) __builtin_trap();
  Report report;
  report.options.run_dir = "run";
  if (parse.doc) {
    ReceiptSetSummary receipts;
    for (int rank = 0; rank < 2; ++rank) {
      FileSummary file;
      file.name = file.display = "rank-" + std::to_string(rank) + ".jsonl";
      file.rank = rank;
      file.records = file.last_step = 3;
      file.first_step = 1;
      file.last = dmlp::Receipt{3, "0.5", std::string(64, 'a'), rank};
      receipts.ranks.push_back(file);
    }
    CheckResultDoc(*parse.doc, receipts, "run/result.json", report.findings);
  } else {
    report.findings.Add(Finding::Of("result.invalid", "run/result.json", parse.problem));
  }
  nlohmann::json again = nlohmann::json::parse(DumpReport(ReportToJson(report)), nullptr, false);
  if (again.is_discarded()) __builtin_trap();
  return 0;
}
