#include "verify/receipt_stream.h"

#include <utility>

namespace dmlp::verify {

ReceiptStream::ReceiptStream(LineReader reader, std::string name, std::optional<int64_t> rank,
                             std::string display, FindingSink* sink)
    : reader_(std::move(reader)), sink_(sink) {
  summary_.name = std::move(name);
  summary_.display = std::move(display);
  summary_.rank = rank;
}

void ReceiptStream::Report(std::string_view id, int64_t line, std::string message) {
  if (sink_ != nullptr) sink_->Add(Finding::Of(id, summary_.display, std::move(message)).AtLine(line));
}

void ReceiptStream::ReportDefect(const ReceiptLineParse& parse, int64_t line,
                                 const std::string& prefix) {
  if (sink_ == nullptr) return;
  Finding finding = Finding::Of(ReceiptDefectId(parse.defect), summary_.display, prefix + parse.detail);
  finding.AtLine(line);
  if (parse.usable) finding.AtStep(parse.receipt.step);
  sink_->Add(std::move(finding));
}

Result<bool> ReceiptStream::Next(Receipt* record) {
  Line line;
  for (;;) {
    DMLP_ASSIGN_OR_RETURN(bool more, reader_.Next(&line));
    if (!more) {
      summary_.bytes = reader_.bytes_read();
      return false;
    }
    ++summary_.lines;
    const Receipt* found = RecordOfLine(line);
    if (line.has_newline) last_line_bytes_ = line.length + 1;
    if (found != nullptr && Track(*found, line.number)) {
      *record = *found;
      record_line_ = line.number;
      return true;
    }
  }
}

const Receipt* ReceiptStream::RecordOfLine(const Line& line) {
  if (line.is_last && !line.has_newline && line.all_nul) {
    ReportNulTail(line);
    return nullptr;
  }
  if (line.too_long) {
    Report("line.too_long", line.number,
           "line of " + std::to_string(line.length) + " bytes (limit " +
               std::to_string(kMaxReceiptLineBytes) + ")");
    return nullptr;
  }
  const bool expect_rank = summary_.rank.has_value();
  ParseReceiptLine(line.text, expect_rank, parse_);
  // A write cut short leaves a prefix of a valid line: either JSON that stops
  // early, or a whole record whose '\n' never came.
  const bool prefix_like = parse_.ok() || parse_.defect == ReceiptDefect::kTruncated;
  if (line.is_last && prefix_like && (!line.has_newline || !parse_.ok())) {
    summary_.torn_last = true;
    Report("line.torn_last", line.number,
           parse_.ok() ? "the last record has no newline" : "the last line is cut short");
    return nullptr;
  }
  if (!parse_.ok()) ReportDefect(parse_, line.number, "");
  const Receipt* record = nullptr;
  if (parse_.usable) {
    record = &parse_.receipt;
  } else if (parse_.defect == ReceiptDefect::kGlued) {
    ParseReceiptLine(line.text.substr(parse_.glued_offset), expect_rank, glued_);
    if (!glued_.ok()) ReportDefect(glued_, line.number, "in the glued record: ");
    if (glued_.usable) record = &glued_.receipt;
  }
  if (record != nullptr && expect_rank && record->rank != summary_.rank && sink_ != nullptr) {
    sink_->Add(Finding::Of("rank.field_mismatch", summary_.display, "rank field differs from the file name")
                   .AtLine(line.number)
                   .AtStep(record->step)
                   .Expect(std::to_string(*summary_.rank), std::to_string(*record->rank)));
  }
  return record;
}

// A file that ends in NUL bytes from a line boundary on: a process restored
// from a point later than the file's contents wrote at its saved offset and
// left a hole (or was stopped before writing into it). The receipts that the
// hole stands for are lost, not damaged: incomplete, with the steps estimated
// from the length of the line before it.
void ReceiptStream::ReportNulTail(const Line& line) {
  summary_.torn_last = true;
  const int64_t last = summary_.last ? summary_.last->step : 0;
  const uint64_t line_bytes = last_line_bytes_ > 0 ? last_line_bytes_ : 1;
  const int64_t lost = static_cast<int64_t>((line.length + line_bytes / 2) / line_bytes);
  std::string steps = lost <= 1 ? "step " + std::to_string(last + 1)
                                : "steps " + std::to_string(last + 1) + ".." + std::to_string(last + lost);
  if (sink_ != nullptr)
    sink_->Add(Finding::Of("line.nul_tail", summary_.display,
                           "the file ends in " + std::to_string(line.length) +
                               " NUL bytes after step " + std::to_string(last) +
                               ": receipts lost when the process was restored (" + steps +
                               (last_line_bytes_ > 0 ? ", estimated from the line length)" : ")"))
                   .AtLine(line.number)
                   .AtStep(last + 1));
}

bool ReceiptStream::Track(const Receipt& record, int64_t line_number) {
  const int64_t step = record.step;
  const int64_t last = summary_.last ? summary_.last->step : 0;
  auto report = [&](std::string_view id, std::string expected, std::string message) {
    if (sink_ == nullptr) return;
    sink_->Add(Finding::Of(id, summary_.display, std::move(message))
                   .AtLine(line_number)
                   .AtStep(step)
                   .Expect(std::move(expected), std::to_string(step)));
  };
  if (replaying_) {
    if (step == replay_step_ + 1 && step <= last) {
      replay_step_ = step;  // the restarted sequence retraces steps already counted
      return false;
    }
    replaying_ = false;
  }
  if (step > last) {
    if (step != last + 1)
      report("steps.gap", std::to_string(last + 1),
             step == last + 2 ? "step " + std::to_string(last + 1) + " is missing"
                              : "steps " + std::to_string(last + 1) + ".." + std::to_string(step - 1) + " are missing");
    ++summary_.records;
    if (summary_.first_step == 0) summary_.first_step = step;
    summary_.last_step = step;
    summary_.last = record;
    return true;
  }
  if (step == last) {
    const bool same = record.loss == summary_.last->loss &&
                      record.params_sha256 == summary_.last->params_sha256;
    report(same ? "steps.duplicate" : "steps.conflicting_duplicate", std::to_string(last + 1),
           same ? "step " + std::to_string(step) + " appears again with the same record"
                : "step " + std::to_string(step) + " appears again with a different record");
  } else if (step == 1) {
    report("steps.restart", std::to_string(last + 1),
           "steps start again at 1 after step " + std::to_string(last));
    replaying_ = true;
    replay_step_ = 1;
  } else {
    report("steps.out_of_order", std::to_string(last + 1),
           "step " + std::to_string(step) + " after step " + std::to_string(last));
  }
  return false;
}

}  // namespace dmlp::verify
