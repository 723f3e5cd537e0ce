// defines: FileSummary, ReceiptStream
//
// One receipt file read as a sequence of steps: framing (line_reader.h), the
// strict line parser (common/receipt_reader.h), the rank field, and the step
// order. Findings go to a sink; what comes out is the file's accepted records,
// whose steps strictly increase, so that several files can be merged by step
// with one record per file in memory.
//
// Step rules for a record with step s after the last accepted step p:
//   s == p + 1          accepted
//   s >  p + 1          steps.gap, accepted (the first record must be step 1)
//   s == p              steps.duplicate / steps.conflicting_duplicate, dropped
//   s == 1 < p          steps.restart, dropped; the replay 2, 3, ... up to p is
//                       dropped silently, then counting resumes at p + 1
//   s <  p              steps.out_of_order, dropped
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/receipt.h"
#include "common/receipt_reader.h"
#include "common/status.h"
#include "verify/findings.h"
#include "verify/line_reader.h"

namespace dmlp::verify {

struct FileSummary {
  std::string name;             // "rank-0.jsonl", "metrics.jsonl"
  std::string display;          // the path shown in findings: "<run dir>/<name>"
  std::optional<int64_t> rank;  // the N of rank-N.jsonl; none for metrics.jsonl
  int64_t lines = 0;
  int64_t records = 0;          // accepted records
  int64_t first_step = 0, last_step = 0;  // of accepted records; 0 when none
  bool torn_last = false;
  uint64_t bytes = 0;
  std::optional<Receipt> last;  // the last accepted record
};

class ReceiptStream {
 public:
  /// `sink` may be null: the stream then checks silently (used by --against).
  ReceiptStream(LineReader reader, std::string name, std::optional<int64_t> rank,
                std::string display, FindingSink* sink);
  /// The next accepted record: true and `*record` set, false at the end, IO_ERROR.
  Result<bool> Next(Receipt* record);
  const FileSummary& summary() const { return summary_; }
  const std::string& display() const { return summary_.display; }
  /// The line number of the record Next() returned last.
  int64_t record_line() const { return record_line_; }

 private:
  // The record a line yields, if any (pointing into parse_ or glued_), after
  // reporting its framing and parse defects.
  const Receipt* RecordOfLine(const Line& line);
  void ReportNulTail(const Line& line);
  // Applies the step rules; true when the record is accepted.
  bool Track(const Receipt& record, int64_t line_number);
  void Report(std::string_view id, int64_t line, std::string message);
  void ReportDefect(const ReceiptLineParse& parse, int64_t line, const std::string& prefix);

  LineReader reader_;
  FindingSink* sink_;
  ReceiptLineParse parse_, glued_;  // reused line after line: no allocation per line
  FileSummary summary_;
  bool replaying_ = false;  // after steps.restart, until the replay passes the old last step
  int64_t replay_step_ = 0;
  uint64_t last_line_bytes_ = 0;  // the last line that ended in '\n', with it
  int64_t record_line_ = 0;
};

}  // namespace dmlp::verify
