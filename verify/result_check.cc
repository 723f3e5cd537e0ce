#include "verify/result_check.h"

#include "verify/run_dir.h"

namespace dmlp::verify {
namespace {

void CheckSteps(const ResultDoc& doc, const ReceiptSetSummary& receipts, const std::string& result,
                FindingSink& sink) {
  if (doc.plan_steps != doc.steps)
    sink.Add(Finding::Of("result.steps_mismatch", result, "steps differs from plan.steps")
                 .Expect(std::to_string(doc.plan_steps), std::to_string(doc.steps)));
  for (const FileSummary& file : receipts.ranks) {
    if (file.last_step == doc.steps && file.records == doc.steps) continue;
    sink.Add(Finding::Of("result.steps_mismatch", file.display,
                         "result.json says " + std::to_string(doc.steps) + " steps; this file has " +
                             std::to_string(file.records) + " records ending at step " +
                             std::to_string(file.last_step))
                 .Expect(std::to_string(doc.steps) + " records ending at step " + std::to_string(doc.steps),
                         std::to_string(file.records) + " records ending at step " + std::to_string(file.last_step)));
  }
  if (receipts.metrics && (receipts.metrics->last_step != doc.steps || receipts.metrics->records != doc.steps))
    sink.Add(Finding::Of("metrics.mismatch", receipts.metrics->display,
                         "result.json says " + std::to_string(doc.steps) + " steps")
                 .Expect(std::to_string(doc.steps), std::to_string(receipts.metrics->last_step)));
}

void CheckLastRecord(const ResultDoc& doc, const ReceiptSetSummary& receipts, const std::string& result,
                     FindingSink& sink) {
  const std::optional<Receipt>& last = receipts.LastRecord();
  if (!last) return;  // no receipts: ranks.none already says so
  if (doc.final_loss != last->loss)
    sink.Add(Finding::Of("result.final_loss_mismatch", result, "final_loss differs from the last receipt")
                 .AtStep(last->step)
                 .Expect(last->loss, doc.final_loss));
  if (doc.params_sha256 != last->params_sha256)
    sink.Add(Finding::Of("result.params_sha256_mismatch", result,
                         "params_sha256 differs from the last receipt")
                 .AtStep(last->step)
                 .Expect(last->params_sha256, doc.params_sha256));
}

void CheckRankFiles(const ResultDoc& doc, const std::string& result, FindingSink& sink) {
  if (static_cast<int64_t>(doc.rank_files.size()) != doc.processes)
    sink.Add(Finding::Of("result.processes_mismatch", result, "processes differs from len(rank_files)")
                 .Expect(std::to_string(doc.processes), std::to_string(doc.rank_files.size())));
  if (doc.model_processes && *doc.model_processes != doc.processes)
    sink.Add(Finding::Of("result.processes_mismatch", result, "processes differs from model.processes")
                 .Expect(std::to_string(doc.processes), std::to_string(*doc.model_processes)));
  for (size_t i = 0; i < doc.rank_files.size(); ++i) {
    const std::string& name = doc.rank_files[i];
    const std::string expected = "rank-" + std::to_string(i) + ".jsonl";
    if (name == expected) continue;
    std::string why = RankOfFileName(name) < 0 ? "is not a plain rank-N.jsonl name (never opened)"
                                               : "is out of order";
    sink.Add(Finding::Of("result.rank_files_invalid", result,
                         "rank_files[" + std::to_string(i) + "] " + why)
                 .Expect(expected, name.substr(0, 200)));
  }
}

}  // namespace

void CheckResultDoc(const ResultDoc& doc, const ReceiptSetSummary& receipts,
                    const std::string& result_display, FindingSink& sink) {
  if (!doc.complete)
    sink.Add(Finding::Of("result.not_complete", result_display, "complete is false").Expect("true", "false"));
  CheckSteps(doc, receipts, result_display, sink);
  CheckLastRecord(doc, receipts, result_display, sink);
  CheckRankFiles(doc, result_display, sink);
  auto torn = [&](const FileSummary& file) {
    if (file.torn_last)
      sink.Add(Finding::Of("result.torn_receipts", file.display,
                           "result.json is present but this file ends in a torn line"));
  };
  for (const FileSummary& file : receipts.ranks) torn(file);
  if (receipts.metrics) torn(*receipts.metrics);
}

}  // namespace dmlp::verify
