#include "verify/receipt_set.h"

#include <algorithm>
#include <limits>
#include <map>

#include "common/format/error_codes.h"

namespace dmlp::verify {
namespace {

// One file of the merge and its current (not yet consumed) record.
struct Source {
  std::unique_ptr<ReceiptStream> stream;
  Receipt head;
  bool has_head = false;

  Status Advance() {
    DMLP_ASSIGN_OR_RETURN(has_head, stream->Next(&head));
    return Status::Ok();
  }
  bool At(int64_t step) const { return has_head && head.step == step; }
};

class Merge {
 public:
  Merge(std::vector<Source>& ranks, Source* metrics, ReceiptSetSummary& summary, FindingSink& sink,
        RunTrace* trace)
      : ranks_(ranks), metrics_(metrics), summary_(summary), sink_(sink), trace_(trace) {
    if (trace_ == nullptr) return;
    std::vector<int64_t> names;
    for (const Source& source : ranks_) names.push_back(*source.stream->summary().rank);
    std::string curve = metrics_ != nullptr ? metrics_->stream->summary().name
                        : ranks_.empty()    ? std::string()
                                            : ranks_.front().stream->summary().name;
    trace_->Begin(std::move(names), std::move(curve));
    states_.resize(ranks_.size());
  }

  Status Run() {
    for (Source& source : ranks_) DMLP_RETURN_IF_ERROR(source.Advance());
    if (metrics_ != nullptr) DMLP_RETURN_IF_ERROR(metrics_->Advance());
    for (;;) {
      int64_t step = std::numeric_limits<int64_t>::max();
      for (const Source& source : ranks_)
        if (source.has_head) step = std::min(step, source.head.step);
      if (metrics_ != nullptr && metrics_->has_head) step = std::min(step, metrics_->head.step);
      if (step == std::numeric_limits<int64_t>::max()) return Status::Ok();
      const bool diverged = CompareRanks(step);
      if (metrics_ != nullptr) CompareMetrics(step);
      if (trace_ != nullptr) Trace(step, diverged);
      for (Source& source : ranks_)
        if (source.At(step)) DMLP_RETURN_IF_ERROR(source.Advance());
      if (metrics_ != nullptr && metrics_->At(step)) DMLP_RETURN_IF_ERROR(metrics_->Advance());
    }
  }

 private:
  // True when the ranks that have `step` disagree there.
  bool CompareRanks(int64_t step) {
    const Source* first = nullptr;
    const Source* hash_other = nullptr;
    const Source* loss_other = nullptr;
    for (const Source& source : ranks_) {
      if (!source.At(step)) continue;
      if (first == nullptr) {
        first = &source;
        continue;
      }
      if (hash_other == nullptr && source.head.params_sha256 != first->head.params_sha256)
        hash_other = &source;
      if (loss_other == nullptr && source.head.loss != first->head.loss) loss_other = &source;
    }
    if (hash_other == nullptr && loss_other == nullptr) return false;
    ++summary_.divergent_steps;
    // Each kind is reported at its first step only: after one divergence, every
    // later step usually differs too and would say nothing new.
    if (hash_other != nullptr && !hash_reported_) {
      hash_reported_ = true;
      sink_.Add(Finding::Of("ranks.hash_divergence", hash_other->stream->display(),
                            "ranks disagree on params_sha256 at step " + std::to_string(step) + ": " +
                                OddHashRanksText(step) + "; groups " + GroupsText(Groups(step)))
                    .AtLine(hash_other->stream->record_line())
                    .AtStep(step)
                    .Expect(first->head.params_sha256, hash_other->head.params_sha256));
    }
    if (loss_other != nullptr && !loss_reported_) {
      loss_reported_ = true;
      sink_.Add(Finding::Of("ranks.loss_divergence", loss_other->stream->display(),
                            "ranks disagree on loss at step " + std::to_string(step) + ": " +
                                GroupsText(Groups(step)))
                    .AtLine(loss_other->stream->record_line())
                    .AtStep(step)
                    .Expect(first->head.loss, loss_other->head.loss));
    }
    if (!summary_.divergence) {
      const char* differs_in = hash_other == nullptr ? "loss" : loss_other == nullptr ? "params_sha256" : "both";
      summary_.divergence = Divergence{step, "ranks", Groups(step), {}, differs_in};
    }
    return true;
  }

  // Each rank's state at `step` for the HTML report: a rank "differs" when it is
  // outside the largest group of equal records (ties: the group of the lowest rank).
  void Trace(int64_t step, bool diverged) {
    for (size_t i = 0; i < ranks_.size(); ++i) states_[i] = ranks_[i].At(step) ? kRankAgrees : kRankAbsent;
    if (diverged) {
      std::vector<std::vector<int64_t>> groups = Groups(step);
      size_t majority = 0;
      for (size_t g = 1; g < groups.size(); ++g)
        if (groups[g].size() > groups[majority].size()) majority = g;
      for (size_t i = 0; i < ranks_.size(); ++i) {
        if (!ranks_[i].At(step)) continue;
        const int64_t rank = *ranks_[i].stream->summary().rank;
        const auto& agreeing = groups[majority];
        if (std::find(agreeing.begin(), agreeing.end(), rank) == agreeing.end()) states_[i] = kRankDiffers;
      }
    }
    const Source* curve = metrics_ != nullptr ? metrics_ : ranks_.empty() ? nullptr : &ranks_.front();
    std::optional<std::string_view> loss;
    if (curve != nullptr && curve->At(step)) loss = curve->head.loss;
    trace_->OnStep(step, states_, loss);
  }

  // The ranks outside the digest a strict majority of the ranks at `step` hold,
  // by that majority — every rank when none has one (two ranks, a tie): the
  // same ranks dmlp-train's divergence check names in RANK_DIVERGED.
  std::string OddHashRanksText(int64_t step) const {
    std::map<std::string_view, std::vector<int64_t>> holders;
    size_t present = 0;
    for (const Source& source : ranks_) {
      if (!source.At(step)) continue;
      holders[source.head.params_sha256].push_back(*source.stream->summary().rank);
      ++present;
    }
    const std::vector<int64_t>* majority = nullptr;
    for (const auto& [hash, ranks] : holders)
      if (2 * ranks.size() > present) majority = &ranks;
    std::vector<int64_t> odd;
    for (const auto& [hash, ranks] : holders)
      if (&ranks != majority) odd.insert(odd.end(), ranks.begin(), ranks.end());
    std::sort(odd.begin(), odd.end());
    auto join = [](const std::vector<int64_t>& ranks) {
      std::string text;
      for (int64_t rank : ranks) text += (text.empty() ? "" : ",") + std::to_string(rank);
      return text;
    };
    if (majority == nullptr) return "rank(s) " + join(odd) + " differ (no majority)";
    return "rank(s) " + join(odd) + " differ from the majority (ranks " + join(*majority) + ")";
  }

  // Ranks at `step` grouped by equal (params_sha256, loss), groups ordered by their smallest rank.
  std::vector<std::vector<int64_t>> Groups(int64_t step) const {
    std::vector<std::vector<int64_t>> groups;
    std::vector<const Receipt*> values;
    for (const Source& source : ranks_) {
      if (!source.At(step)) continue;
      size_t group = 0;
      while (group < values.size() && !(values[group]->params_sha256 == source.head.params_sha256 &&
                                         values[group]->loss == source.head.loss))
        ++group;
      if (group == values.size()) {
        values.push_back(&source.head);
        groups.emplace_back();
      }
      groups[group].push_back(*source.stream->summary().rank);
    }
    return groups;
  }

  void CompareMetrics(int64_t step) {
    if (ranks_.empty() || ranks_.front().stream->summary().rank != 0) return;
    const Source& rank0 = ranks_.front();
    const bool in_rank0 = rank0.At(step), in_metrics = metrics_->At(step);
    const std::string file = metrics_->stream->display();
    if (in_rank0 && in_metrics) {
      const int64_t line = metrics_->stream->record_line();
      if (rank0.head.params_sha256 != metrics_->head.params_sha256)
        sink_.Add(Finding::Of("metrics.mismatch", file, "params_sha256 differs from rank-0.jsonl")
                      .AtLine(line)
                      .AtStep(step)
                      .Expect(rank0.head.params_sha256, metrics_->head.params_sha256));
      else if (rank0.head.loss != metrics_->head.loss)
        sink_.Add(Finding::Of("metrics.mismatch", file, "loss differs from rank-0.jsonl")
                      .AtLine(line)
                      .AtStep(step)
                      .Expect(rank0.head.loss, metrics_->head.loss));
      return;
    }
    // A step one file lacks while the other goes on past it; a file that simply
    // ended earlier is left to the end-of-run count check.
    if (in_rank0 && metrics_->has_head)
      sink_.Add(Finding::Of("metrics.mismatch", file, "step missing from metrics.jsonl").AtStep(step));
    if (in_metrics && rank0.has_head)
      sink_.Add(Finding::Of("metrics.mismatch", file, "step not in rank-0.jsonl").AtStep(step));
  }

  std::vector<Source>& ranks_;
  Source* metrics_;
  ReceiptSetSummary& summary_;
  FindingSink& sink_;
  RunTrace* trace_;
  std::vector<uint8_t> states_;  // per rank, reused step after step
  bool hash_reported_ = false, loss_reported_ = false;
};

void CheckCounts(ReceiptSetSummary& summary, const std::vector<Source>& ranks,
                 const Source* metrics, FindingSink& sink) {
  auto all = [&](auto&& visit) {
    for (const Source& source : ranks) visit(source);
    if (metrics != nullptr) visit(*metrics);
  };
  all([&](const Source& source) {
    summary.last_step = std::max(summary.last_step, source.stream->summary().last_step);
  });
  all([&](const Source& source) {
    const FileSummary& file = source.stream->summary();
    if (file.last_step < summary.last_step)
      sink.Add(Finding::Of("steps.count_mismatch", source.stream->display(),
                           "ends at step " + std::to_string(file.last_step) + ", others reach step " +
                               std::to_string(summary.last_step))
                   .Expect(std::to_string(summary.last_step), std::to_string(file.last_step)));
  });
}

}  // namespace

std::string GroupsText(const std::vector<std::vector<int64_t>>& groups) {
  std::string text;
  for (const auto& group : groups) {
    text += text.empty() ? "{" : " {";
    for (size_t i = 0; i < group.size(); ++i) text += (i ? "," : "") + std::to_string(group[i]);
    text += "}";
  }
  return text;
}

const std::optional<Receipt>& ReceiptSetSummary::LastRecord() const {
  static const std::optional<Receipt> kNone;
  for (const FileSummary& file : ranks)
    if (file.last) return file.last;
  return kNone;
}

Result<std::unique_ptr<ReceiptStream>> OpenReceiptStream(const RunDir& dir, const std::string& name,
                                                         std::optional<int64_t> rank, FindingSink* sink) {
  DMLP_ASSIGN_OR_RETURN(RunFile file, dir.OpenFile(name));
  if (file.kind != FileKind::kRegular)
    return Status::Error(kNotFound, dir.Display(name) + " is not a readable regular file");
  return std::make_unique<ReceiptStream>(LineReader(std::move(file.fd), dir.Display(name)), name, rank,
                                         dir.Display(name), sink);
}

Result<ReceiptSetSummary> CheckReceiptSet(const RunDir& dir, const std::map<int64_t, std::string>& rank_files,
                                          bool read_metrics, FindingSink& sink, RunTrace* trace) {
  std::vector<Source> ranks;
  for (const auto& [rank, name] : rank_files) {
    DMLP_ASSIGN_OR_RETURN(auto stream, OpenReceiptStream(dir, name, rank, &sink));
    ranks.push_back(Source{std::move(stream)});
  }
  std::optional<Source> metrics;
  if (read_metrics) {
    DMLP_ASSIGN_OR_RETURN(auto stream, OpenReceiptStream(dir, "metrics.jsonl", std::nullopt, &sink));
    metrics = Source{std::move(stream)};
  }
  ReceiptSetSummary summary;
  Source* metrics_source = metrics ? &*metrics : nullptr;
  DMLP_RETURN_IF_ERROR(Merge(ranks, metrics_source, summary, sink, trace).Run());
  CheckCounts(summary, ranks, metrics_source, sink);
  for (const Source& source : ranks) summary.ranks.push_back(source.stream->summary());
  if (metrics) summary.metrics = metrics->stream->summary();
  return summary;
}

}  // namespace dmlp::verify

